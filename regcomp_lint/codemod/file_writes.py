"""Sample images, plots and arrays the converted script writes from the main process only.

DCGAN's ``vutils.save_image(fake.detach(), '%s/fake_samples_epoch_%03d.png' % ...)`` ran in one
process; launched on several, every process writes the same file at once (a torn PNG, or the
file of whichever process finished last). A statement that only writes such a file
(:data:`~regcomp_lint.knowledge.torch_api.FILE_WRITERS` and ``FILE_WRITER_METHODS``, or a Hub upload such as cleanRL's
``push_to_hub(args, ...)`` and ``model.push_to_hub(repo)``) goes under
``if accelerator.is_main_process:``. One that also calls a prepared model stays as it is, with a
note: DDP's forward broadcasts buffers, so run by one process it would never return.
Checkpoints (``torch.save``) are ``checkpoint_writes.py``'s.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypeGuard

import libcst as cst

from regcomp_lint.codemod.accelerator_edits import on_main_process
from regcomp_lint.codemod.builders import expression, keyword, with_keyword
from regcomp_lint.codemod.checkpoint_writes import under_rank_test
from regcomp_lint.codemod.local_modules import unread_project_function
from regcomp_lint.codemod.model_methods import unread_model_class
from regcomp_lint.codemod.per_process import per_process_path
from regcomp_lint.codemod.tree import Function, Tree, code, find_all, key_of, methods_of, read_keys, single_target
from regcomp_lint.knowledge.torch_api import (
    FILE_MODE_LETTERS,
    FILE_OPENERS,
    FILE_WRITE_MODES,
    FILE_WRITER_METHODS,
    FILE_WRITERS,
    HUB_UPLOAD_NAMES,
    OUTPUT_FILE_KEYWORDS,
    WRITER_NAME_WORDS,
)
from regcomp_lint.knowledge.training_libraries import MAIN_PROCESS_KEYWORDS

if TYPE_CHECKING:
    from regcomp_lint.codemod.rewrites import Planner


def write_files_once(planner: Planner, places: list[Function]) -> None:
    """Guard each statement of ``places`` that writes a sample or plot file (see the module docstring)."""
    tree = planner.tree
    models = set(planner.models)
    if not any(isinstance(place, cst.Module) for place in places) and not planner.can_reach_accelerator(tree.module):
        _name_module_level_writes(planner)
    for place in places:
        _name_writing_objects(planner, place)
        for call in find_all(place, cst.Call, enter_functions=False):
            if not _may_write(tree, call):
                continue  # (first: the path test below reads every assignment of ``place``)
            if any(per_process_path(place, arg.value) for arg in call.args):
                continue  # f"preds_{rank}.json": each process writes its own
            if _opens_for_writing(tree, call) and not under_rank_test(planner, call):
                if _write_only_block(planner, call, models, place):
                    continue
                planner.notes.append(
                    f"{code(call).strip()} at line {tree.line(call)} writes the same file from every process: put "
                    "what writes it under `if accelerator.is_main_process:` (compute what it needs from the prepared "
                    "model first, in every process)"
                )
                continue
            if under_rank_test(planner, call):
                continue
            if _unread_writer(planner, call, place):
                continue
            if _saves_pretrained(call.func):
                if _saves_a_model(planner, call.func, models, place):
                    _model_saved_once(planner, call, place)
                    continue
            elif not _writes_a_file(tree, call.func):
                _name_output_file(planner, call)
                continue
            line = tree.call_line(call)
            writer = code(call.func)
            if line is None:
                continue  # its result is used (a rare shape): left as it was
            if any(key_of(c.func) in models for c in find_all(line, cst.Call)):
                planner.notes.append(
                    f"{writer}() at line {tree.line(call)} writes a file in every process, and it calls the prepared "
                    "model, which every process must call together: make the samples in one statement and write "
                    "them under `if accelerator.is_main_process:` in the next"
                )
                continue
            if not planner.can_reach_accelerator(place):
                continue
            acc = planner.accelerator_in(place)
            on_main_process(
                planner,
                line,
                acc,
                call,
                f"{writer}() at line {tree.line(call)} runs under `if {acc}.is_main_process:`: every process would "
                "write the same file",
            )


def _name_module_level_writes(planner: Planner) -> None:
    """``oof_df.to_csv(path)`` at module level, after ``train_loop()`` (which makes the
    Accelerator) returns (survey 21f hms_eeg): every process writes the file, and no accelerator is
    in reach there to guard it with. Named, with accelerate's ``PartialState`` (the process state
    the Accelerator set up), since whether each process computed the same content is not known."""
    tree = planner.tree
    for call in find_all(tree.module, cst.Call, enter_functions=False):
        if not (_opens_for_writing(tree, call) or _writes_a_file(tree, call.func)):
            continue
        if any(per_process_path(tree.module, arg.value) for arg in call.args) or under_rank_test(planner, call):
            continue
        planner.notes.append(
            f"{code(call.func).strip()}() at line {tree.line(call)}, at module level, writes the same file from every "
            "process, and no accelerator is in reach there: where every process computed the same content, write it "
            "under `if PartialState().is_main_process:` (from accelerate import PartialState)"
        )


def _may_write(tree: Tree, call: cst.Call) -> bool:
    """``call`` opens a file for writing, saves with ``save_pretrained`` and the like, or is a
    known writer, or named like one (:func:`_unread_writer`): the only calls
    :func:`write_files_once` does anything about. Cheap, so that
    the per-process path test (which reads every assignment of the function, for each call:
    quadratic in a long function) runs only for these."""
    return (
        _opens_for_writing(tree, call)
        or _saves_pretrained(call.func)
        or _writes_a_file(tree, call.func)
        or _writer_name(call.func) is not None
        or _output_file(call) is not None
    )


def _output_file(call: cst.Call) -> cst.Arg | None:
    """The argument that hands ``call`` the file it writes (``out_path=f"eval_{n}.mp4"``)."""
    return next((a for a in call.args if a.keyword is not None and a.keyword.value in OUTPUT_FILE_KEYWORDS), None)


def _name_output_file(planner: Planner, call: cst.Call) -> None:
    """A call of code the fixer does not know as a writer, handed the file it writes (survey 21f
    pusht_state_dp's ``evaluate_model(..., out_path=...)`` of a module not fetched): named, not
    guarded, since what it writes may differ between processes and it may run a prepared model."""
    handed = _output_file(call)
    if handed is None:
        return
    planner.notes.append(
        f"{code(call.func).strip()}() at line {planner.tree.line(call)} is handed {code(handed).strip().rstrip(',')} "
        "(a file it writes): every process runs it and writes that file; call it under `if "
        "accelerator.is_main_process:` where what it writes is the same on every process and it runs no prepared "
        "model (DDP's forward must run in every process)"
    )


def _unread_writer(planner: Planner, call: cst.Call, place: Function) -> bool:
    """A call, named like a writer, of a function of a module the conversion cannot read (survey
    21b lmforge_trainer's ``save_checkpoint``, 21d sgns_sparse's ``write_json``), or a method of
    the prepared model whose class comes from one (23b mird_phase2's
    ``model_to_save.save_checkpoint(path)``, ``MIRDModel`` of ``model_agentic``; not
    ``save_pretrained``, which :func:`_model_saved_once` handles): whether it writes, and what, is
    unknown, so it is named in a note rather than guarded."""
    name = _writer_name(call.func)
    if name is None:
        return False
    qualname = unread_project_function(planner.tree, call.func)
    if qualname is not None:
        source = qualname.rsplit(".", 1)[0]
    elif not _saves_pretrained(call.func) and (cls := unread_model_class(planner, place, call)) is not None:
        name, source = code(call.func).strip(), ".".join(cls)
    else:
        return False
    planner.notes.append(
        f"{name}() at line {planner.tree.line(call)}, of {source} (not found beside the script, "
        "so not read), runs in every process: if it writes a file, every process writes the same one (and one may "
        "read it back before another has rewritten it); put the call under `if accelerator.is_main_process:` and "
        "call accelerator.wait_for_everyone() before any read of that file"
    )
    return True


def _writer_name(func: cst.BaseExpression) -> str | None:
    """The called name when a word of it says it writes (``save_checkpoint``, ``write_json``)."""
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
    return name if WRITER_NAME_WORDS & set(name.lower().split("_")) else None


def _saves_pretrained(func: cst.BaseExpression) -> TypeGuard[cst.Attribute]:
    return isinstance(func, cst.Attribute) and func.attr.value in MAIN_PROCESS_KEYWORDS


def _saves_a_model(planner: Planner, func: cst.Attribute, models: set[str], place: Function) -> bool:
    """``func`` is the ``save_pretrained`` of a prepared model or of a name ``place`` binds to one
    (``model_to_save = model.module if hasattr(model, "module") else model``). Anything else that
    saves so -- a tokenizer, a processor, ``model.config`` -- only writes files."""
    receiver = key_of(func.value)
    if receiver is None:
        return False
    if receiver in models:
        return True
    return any(
        not models.isdisjoint(read_keys(target[1]))
        for assign in find_all(place, cst.Assign, enter_functions=False)
        if (target := single_target(assign)) is not None and target[0] == receiver
    )


def _model_saved_once(planner: Planner, call: cst.Call, place: Function) -> None:
    """Every process still calls a model's ``save_pretrained`` (a sharded model's weights are
    gathered by all); ``is_main_process`` lets the main process alone write. The prepared model's
    own is ``wrapped_access``'s; this is an alias's."""
    func = call.func
    assert isinstance(func, cst.Attribute)
    if key_of(func.value) in set(planner.models) or not planner.can_reach_accelerator(place):
        return
    acc = planner.accelerator_in(place)
    if not tell_main_process(planner, call, func.attr.value, acc):
        return
    planner.notes.append(
        f"{code(func).strip()}() at line {planner.tree.line(call)} gets is_main_process={acc}.is_main_process: every "
        "process still calls it (a sharded model's weights are gathered by all), the main process alone writes"
    )


def tell_main_process(planner: Planner, call: cst.Call, method: str, acc: str) -> bool:
    """Give ``call`` (``x.save_pretrained(path)``) ``is_main_process=acc.is_main_process`` (see
    :data:`~regcomp_lint.knowledge.training_libraries.MAIN_PROCESS_KEYWORDS`); not when the script
    already passes it by keyword, position or ``**kwargs``. True when the keyword was added."""
    if method not in MAIN_PROCESS_KEYWORDS:
        return False
    name, position = MAIN_PROCESS_KEYWORDS[method]
    positional = [a for a in call.args if a.keyword is None and not a.star]
    if keyword(call, name) is not None or len(positional) > position or any(a.star for a in call.args):
        return False
    planner.edits.on(call, lambda u: with_keyword(u, name, expression(f"{acc}.is_main_process", planner.module)))
    return True


def _name_writing_objects(planner: Planner, place: Function) -> None:
    """``loss_log = LossLog("loss_log.json")`` then ``loss_log.add(step, loss)`` (dpo_video, survey
    21c): a method of the script's own class that opens a file for writing, called on an object
    ``place`` builds with a path that names no process, writes the same file from every process.
    Named, not guarded: the method may do more than write (keep rows, call a model)."""
    tree = planner.tree
    classes = {c.name.value: c for c in find_all(tree.module, cst.ClassDef)}
    for assign in find_all(place, cst.Assign, enter_functions=False):
        target, value = single_target(assign), assign.value
        if target is None or not isinstance(value, cst.Call) or not isinstance(value.func, cst.Name):
            continue
        cls = classes.get(value.func.value)
        if cls is None or any(per_process_path(place, a.value) for a in value.args) or under_rank_test(planner, assign):
            continue
        writers = _writing_methods(tree, cls)
        for use in find_all(place, cst.Call, enter_functions=False):
            func = use.func
            if not (isinstance(func, cst.Attribute) and key_of(func.value) == target[0]):
                continue
            if func.attr.value in writers and not under_rank_test(planner, use):
                write = writers[func.attr.value]
                planner.notes.append(
                    f"{code(func).strip()}() at line {tree.line(use)} writes the same file from every process "
                    f"({cls.name.value}.{func.attr.value}() opens `{code(write).strip()}` at line {tree.line(write)}): "
                    "call it under `if accelerator.is_main_process:` where it only writes"
                )
                break


def _writing_methods(tree: Tree, cls: cst.ClassDef) -> dict[str, cst.Call]:
    """The methods of ``cls`` that write a file, themselves or through ``self.<method>()``
    (``add()`` calling ``self._flush()``), each with the call that writes."""
    writers: dict[str, cst.Call] = {}
    for _ in range(len(methods_of(cls))):  # a chain of self.<method>() calls, one link a pass
        for method in methods_of(cls):
            for call in find_all(method, cst.Call):
                func, name = call.func, method.name.value
                if name in writers:
                    break
                if _opens_for_writing(tree, call) or _writes_a_file(tree, func):
                    writers[name] = call
                elif isinstance(func, cst.Attribute) and key_of(func.value) == "self" and func.attr.value in writers:
                    writers[name] = writers[func.attr.value]
    return writers


def _write_only_block(planner: Planner, call: cst.Call, models: set[str], place: Function) -> bool:
    """``with open(path, "wb") as f: accelerator.save(state, f)`` (word_language_model's best
    model): every process opened the file for writing, truncating it while the main process
    wrote. A ``with`` block that only writes -- no call of a prepared model, nothing but saves and
    writes of the accelerator's -- goes under ``if accelerator.is_main_process:``."""
    tree = planner.tree
    item = tree.parent(call)
    block = tree.parent(item) if isinstance(item, cst.WithItem) else None
    if not isinstance(block, cst.With) or block.items[0].item is not call or not planner.can_reach_accelerator(place):
        return False
    acc = planner.accelerator_in(place)
    for inner in find_all(block.body, cst.Call):
        func = inner.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        receiver = key_of(func.value) if isinstance(func, cst.Attribute) else None
        if key_of(func) in models or (receiver in models and name != "state_dict"):
            return False  # the prepared model runs: every process must
        if receiver == acc and name not in ("save", "unwrap_model"):
            return False  # gather, reduce, wait_for_everyone: collectives
        if name != "save" and any(key_of(a.value) in models for a in inner.args):
            return False  # handed the model: it may run it
    on_main_process(
        planner,
        block,
        acc,
        call,
        f"the `with {code(call).strip()}` block at line {tree.line(call)} runs under `if {acc}.is_main_process:`: "
        + (
            "every process appended the same lines to the file"
            if "a" in _mode(tree, call)
            else "every process opened the file for writing, truncating what the main process wrote"
        ),
    )
    return True


def _opens_for_writing(tree: Tree, call: cst.Call) -> bool:
    """``open(path, "w")`` (or ``"a"``, ``"wb"``...), ``gzip.open(path, "wt")`` or a path's
    ``.open("w")`` (survey 19b bert_conll's ``(run_dir / "predictions.jsonl").open("w")``): a text
    or data file the script writes. Only named, not guarded: what goes into it is often computed
    with the prepared model right there (a test-set predictions file), which every process must run."""
    return any(c in _mode(tree, call) for c in FILE_WRITE_MODES)


def _mode(tree: Tree, call: cst.Call) -> str:
    """The literal mode the opening ``call`` is given ("" when it is not one, or ``call`` opens
    nothing): ``open`` and the :data:`~regcomp_lint.knowledge.torch_api.FILE_OPENERS` take it
    second, ``pathlib.Path.open`` first."""
    func = call.func
    kind = type(func)  # (``type(x) is``: see tree.key_of)
    if kind is cst.Name and func.value == "open":  # type: ignore[attr-defined]
        position = 1
    elif kind is cst.Attribute and func.attr.value == "open":  # type: ignore[attr-defined]
        position = 1 if tree.resolves_to(func, *FILE_OPENERS) else 0
    else:
        return ""
    mode = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == "mode"), None)
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    if mode is None and len(positional) > position:
        mode = positional[position]
    value = mode.evaluated_value if isinstance(mode, cst.SimpleString) else ""
    return value if isinstance(value, str) and value and set(value) <= FILE_MODE_LETTERS else ""


def _writes_a_file(tree: Tree, func: cst.BaseExpression) -> bool:
    """``func`` writes a file or uploads one: a known writer, or a ``push_to_hub`` of any owner."""
    name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else None
    if isinstance(func, cst.Attribute) and name in FILE_WRITER_METHODS:
        return True
    return name in HUB_UPLOAD_NAMES or tree.resolves_to(func, *FILE_WRITERS)
