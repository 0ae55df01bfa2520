"""The one pick of "which function of this file a call runs", on both trees it is read from."""

from __future__ import annotations

import ast
import textwrap

import libcst as cst

from regcomp_lint.analysis.own_callees import AST, MAX_BASES, function_called, method_called
from regcomp_lint.codemod.tree import CST

_CLASSES = """
class Base:
    def save(self): return "base"
    def shared(self): return "base"
class Mixin:
    def shared(self): return "mixin"
class Model(Mixin, Base):
    def forward(self): return "own"
"""


def _ast_classes(source: str) -> dict[str, ast.ClassDef]:
    return {c.name: c for c in ast.parse(textwrap.dedent(source)).body if isinstance(c, ast.ClassDef)}


def _cst_classes(source: str) -> dict[str, cst.ClassDef]:
    module = cst.parse_module(textwrap.dedent(source))
    return {c.name.value: c for c in module.body if isinstance(c, cst.ClassDef)}


def _ast_owner(method: ast.FunctionDef | None, classes: dict[str, ast.ClassDef]) -> str | None:
    return next((name for name, c in classes.items() if method in c.body), None)


def test_function_called_is_the_only_candidate() -> None:
    one, two = ast.parse("def f(): pass\ndef f(): pass").body
    assert function_called([one]) is one
    assert function_called([one, two]) is None  # which one runs depends on the order taken
    assert function_called([]) is None


def test_method_of_the_class_itself_first() -> None:
    classes = _ast_classes(_CLASSES)
    assert _ast_owner(method_called(AST, classes["Model"], "forward", classes), classes) == "Model"


def test_method_of_the_first_base_of_the_file_that_defines_it() -> None:
    classes = _ast_classes(_CLASSES)
    assert _ast_owner(method_called(AST, classes["Model"], "shared", classes), classes) == "Mixin"
    # Mixin does not define save and has no base of the file: the first base is the one followed
    assert method_called(AST, classes["Model"], "save", classes) is None
    assert method_called(AST, classes["Model"], "missing", classes) is None
    assert method_called(AST, None, "forward", classes) is None


def test_bases_the_file_does_not_define_are_skipped() -> None:
    classes = _ast_classes("class Own:\n    def step(self): pass\nclass Net(nn.Module, Own): pass\n")
    assert _ast_owner(method_called(AST, classes["Net"], "step", classes), classes) == "Own"


def test_at_most_max_bases_classes_up() -> None:
    chain = ["class C0:\n    def far(self): pass"]
    chain += [f"class C{i}(C{i - 1}): pass" for i in range(1, MAX_BASES + 2)]
    classes = _ast_classes("\n".join(chain))
    assert method_called(AST, classes[f"C{MAX_BASES}"], "far", classes) is not None
    assert method_called(AST, classes[f"C{MAX_BASES + 1}"], "far", classes) is None


def test_async_methods_are_not_followed() -> None:
    classes = _ast_classes("class A:\n    async def run(self): pass\n")
    assert method_called(AST, classes["A"], "run", classes) is None


def test_libcst_spelling_picks_the_same_methods() -> None:
    classes = _cst_classes(_CLASSES)
    for name, owner in (("forward", "Model"), ("shared", "Mixin")):
        method = method_called(CST, classes["Model"], name, classes)
        assert method is not None and method in classes[owner].body.body
    assert method_called(CST, classes["Model"], "save", classes) is None
