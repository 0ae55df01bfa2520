"""Turn every failure into one line the user can act on and exit status 2, never a traceback.

- ``UsageFailure`` / ``ConfigError``: ``regcomp-lint: error: <message>``.
- anything unexpected: a short internal-error message with a hint to report it (the traceback
  only with ``REGCOMP_LINT_DEBUG=1``).
"""

from __future__ import annotations

import functools
import os
import sys
import traceback

import click

from regcomp_lint.errors import UsageFailure
from regcomp_lint.lint.config import ConfigError

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_ERROR = 2
ISSUES_URL = "https://github.com/regcomp-lint/regcomp-lint/issues"


def program_name() -> str:
    """``regcomp-lint`` or ``regcomp-fix``: whichever command is running."""
    ctx = click.get_current_context(silent=True)
    name = ctx.find_root().info_name if ctx is not None else None
    return name if name and name.startswith("regcomp-") else "regcomp-lint"


def error_line(message: str) -> str:
    return f"{program_name()}: error: {message}"


def echo_error(message: str) -> None:
    click.echo(error_line(message), err=True)


def handled(func):
    """Decorator for click callbacks: known errors → one line and exit 2; the rest → bug report hint."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except (click.exceptions.Exit, click.exceptions.ClickException, click.exceptions.Abort):
            raise
        except (ConfigError, UsageFailure) as exc:
            echo_error(str(exc))
            sys.exit(EXIT_ERROR)
        except BrokenPipeError:
            # the reader went away (`| head`); stop quietly, as other CLI tools do
            _silence_stdout()
            sys.exit(EXIT_ERROR)
        except KeyboardInterrupt:
            click.echo("regcomp-lint: interrupted", err=True)
            sys.exit(130)
        except Exception as exc:  # noqa: BLE001 - the last line of defence
            if os.environ.get("REGCOMP_LINT_DEBUG"):
                traceback.print_exc()
            click.echo(
                f"regcomp-lint: internal error: {type(exc).__name__}: {exc}\n"
                f"This is a bug in regcomp-lint; please report it at {ISSUES_URL} with the command you ran"
                " (set REGCOMP_LINT_DEBUG=1 to see the traceback).",
                err=True,
            )
            sys.exit(EXIT_ERROR)

    return wrapper


def _silence_stdout() -> None:
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        pass
