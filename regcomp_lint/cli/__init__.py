"""Command-line commands: one module per command; option parsing and exit codes, no analysis.

``commands`` declares ``regcomp-lint`` (with ``rule`` and ``trace``) and ``regcomp-fix`` with click;
``lint_command``, ``fix_command`` and ``trace_command`` run one invocation each;
``error_handling`` turns every failure into one line and exit status 2.
"""

from regcomp_lint.cli.commands import fix_main, main

__all__ = ["main", "fix_main"]
