"""Does ``regcomp-fix`` still give the same answers? A digest of its results, to compare before and after a change.

Runs the fixer in this process (no start-up, nothing written) on every ``.py`` file under
``fixtures/fix``, ``fixtures/equivalence`` and ``examples``, each named alone as ``regcomp-fix PATH``
would read it, once in diff mode and once with ``--unsafe-fixes``, plus the generated scripts of
``bench/fix_speed.py`` (7 and 200 blocks, and 200 without ``backward()``). For each run it hashes the
output text, the notes, the refusal, the error, the lint fixes, the findings left unfixed, the other
flags of the result and the exit status; it prints one digest over all of them (and with ``-v``
one line per run). A speed change must leave the digest as it was.

    python bench/fix_identity.py [-v] [--save FILE] [--check FILE]
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from fix_speed import generated_script  # noqa: E402 (after the sys.path lines above)

from regcomp_lint.cli.fix_command import (  # noqa: E402
    FileResult,
    FixOptions,
    _fix_file,
    _status,
    convert_options,
    process_text,
)
from regcomp_lint.cli.shared import resolve_settings  # noqa: E402


def describe(result: FileResult, status: int) -> str:
    unfixed = [(d.code, d.message, repr(d.location), repr(d.fix)) for d in result.unfixed]
    fields = (
        result.text,
        result.converted,
        sorted(result.lint_fixed.items()),
        unfixed,
        result.refused,
        result.notes,
        result.error,
        result.not_training,
        result.opted_out,
        result.unchanged,
        result.changed,
        status,
    )
    return repr(fields)


def runs() -> list[tuple[str, str]]:
    """(label, description) of every run."""
    out = []
    files = []
    for folder in ("fixtures/fix", "fixtures/equivalence", "examples"):
        files += sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / folder).rglob("*.py"))
    for unsafe in (False, True):
        opts = FixOptions(unsafe_fixes=unsafe)
        convert = convert_options(opts)
        for path in files:
            settings = resolve_settings((path,), None, select=None, ignore=())
            result = _fix_file(path, opts, settings, convert)
            out.append((f"{'unsafe' if unsafe else 'diff'} {path}", describe(result, _status([result], opts))))
        settings = resolve_settings(("generated.py",), None, select=None, ignore=())
        for name, text in (
            ("gen7.py", generated_script(7)),
            ("gen200.py", generated_script(200)),
            ("gen200_plain.py", generated_script(200, training=False)),
        ):
            result = process_text(text, name, settings, convert, unsafe)
            out.append((f"{'unsafe' if unsafe else 'diff'} {name}", describe(result, _status([result], opts))))
    return out


def _split(line: str) -> tuple[str, str]:
    """``"<digest>  <label>"`` -> (label, digest)."""
    digest, label = line.split("  ", 1)
    return label, digest


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-v", action="store_true", help="one digest per run")
    parser.add_argument("--save", help="write the per-run digests to this file")
    parser.add_argument("--check", help="compare the per-run digests with this file (exit 1 on any difference)")
    args = parser.parse_args()
    import os

    # a path is taken from the caller's folder, else from the repository's root
    check = (
        next((p.resolve() for p in (Path(args.check), ROOT / args.check) if p.is_file()), None) if args.check else None
    )
    if args.check and check is None:
        parser.error(f"--check {args.check}: no such file (saved digests: bench/results/fix_identity_*.txt)")
    save = Path(args.save).resolve() if args.save else None
    os.chdir(ROOT)
    lines = [f"{hashlib.sha256(d.encode()).hexdigest()[:16]}  {label}" for label, d in runs()]
    total = hashlib.sha256("\n".join(lines).encode()).hexdigest()
    if args.v:
        print("\n".join(lines))
    print(f"{len(lines)} runs, digest {total}")
    if save is not None:
        save.write_text("\n".join(lines) + "\n")
    if check is not None:
        # matched by label, so a fixture added since the digests were saved shifts nothing
        want = dict(_split(line) for line in check.read_text().splitlines() if line.strip())
        have = dict(_split(line) for line in lines)
        differ = [f"{have[label]}  {label}" for label in have if label in want and want[label] != have[label]]
        for line in differ:
            print(f"DIFFERS: {line}")
        for label in sorted(have.keys() - want.keys()):
            print(f"NEW (not compared): {label}")
        for label in sorted(want.keys() - have.keys()):
            print(f"GONE: {label}")
        gone = want.keys() - have.keys()
        print("identical" if not differ and not gone else f"{len(differ)} runs differ, {len(gone)} gone")
        return 1 if differ or gone else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
