"""Templates parsed once per process: a later conversion gets the node an earlier one parsed
(libcst's nodes cannot change), while within one conversion every use gets a node of its own
(the edits and the placing of imports tell nodes apart by identity)."""

import libcst as cst

from regcomp_lint.codemod.builders import expression, statement
from regcomp_lint.codemod.tree import clear_find_cache


def test_a_later_conversion_gets_the_parse_of_an_earlier_one():
    module = cst.parse_module("x = 1\n")
    first = statement("accelerator.wait_for_everyone()", module)
    clear_find_cache()  # (the end of a conversion)
    again = statement("accelerator.wait_for_everyone()", module)
    assert again is first
    assert cst.Module([again]).code == "accelerator.wait_for_everyone()\n"


def test_within_one_conversion_each_use_is_a_node_of_its_own():
    module = cst.parse_module("x = 1\n")
    clear_find_cache()
    one = expression("accelerator.device", module)
    two = expression("accelerator.device", module)
    assert one is not two
    assert one.deep_equals(two)


def test_the_module_settings_are_part_of_the_template():
    tabs = cst.parse_module("if x:\n\ty = 1\n")
    spaces = cst.parse_module("if x:\n    y = 1\n")
    crlf = cst.parse_module("x = 1\r\n")
    source = "if accelerator.is_main_process:\n    accelerator.save(state, path)"
    statement(source.replace("    ", "\t"), tabs)
    clear_find_cache()
    for module in (tabs, spaces, crlf):
        text = source.replace("    ", module.default_indent).replace("\n", module.default_newline)
        node = statement(text, module)
        assert module.with_changes(body=[node]).code == text + module.default_newline
        clear_find_cache()
