"""An edit that reads the accelerator: the edit, the node that reads it, the note."""

from __future__ import annotations

from types import SimpleNamespace

import libcst as cst

from regcomp_lint.codemod.accelerator_edits import accelerator_edit, on_main_process
from regcomp_lint.codemod.edits import EditPlan


def _planner(module: cst.Module) -> SimpleNamespace:
    return SimpleNamespace(edits=EditPlan(), uses=[], notes=[], module=module)


def test_on_main_process_guards_the_statement_records_the_use_and_notes() -> None:
    module = cst.parse_module("# keep\ntorch.save(state, path)\n")
    line = module.body[0]
    assert isinstance(line, cst.SimpleStatementLine)
    call = cst.ensure_type(cst.ensure_type(line.body[0], cst.Expr).value, cst.Call)
    planner = _planner(module)
    on_main_process(planner, line, "acc", call, "saved once")  # type: ignore[arg-type]
    (edit,) = planner.edits.replace[line]
    guarded = module.with_changes(body=[edit(line)])
    assert guarded.code == "# keep\nif acc.is_main_process:\n    torch.save(state, path)\n"
    assert planner.uses == [call] and planner.notes == ["saved once"]


def test_no_use_recorded_when_none_is_handed() -> None:
    module = cst.parse_module("f(x)\n")
    planner = _planner(module)
    accelerator_edit(planner, module.body[0], lambda node: node, None, "why")  # type: ignore[arg-type]
    assert planner.uses == [] and planner.notes == ["why"] and len(planner.edits.replace) == 1
