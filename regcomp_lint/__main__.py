"""``python -m regcomp_lint`` is ``regcomp-lint``."""

from regcomp_lint.cli.commands import main

if __name__ == "__main__":
    main(prog_name="regcomp-lint")
