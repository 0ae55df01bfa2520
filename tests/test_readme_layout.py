"""README's Layout section lists the package as it is: every folder, every module, nothing that is gone.

A folder's entry is its line plus the deeper-indented lines under it; each module of the folder
(a ``.py`` file or a sub-package) must be named there as a word. Rule files (``rcNNN_*.py``) are
covered by the ``rcNNN_name.py`` pattern.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "regcomp_lint"
ENTRY = re.compile(r"^  (\S+?)(/|\.py)?(,|\s|$)")


def layout_block(readme: str) -> list[str]:
    section = readme.split("\n## Layout", 1)[1]
    block = section.split("```", 2)[1]
    lines = block.splitlines()[1:]
    start = lines.index("regcomp_lint/")
    end = next(i for i in range(start + 1, len(lines)) if lines[i] and not lines[i].startswith(" "))
    return lines[start + 1 : end]


def entries(lines: list[str]) -> dict[str, str]:
    """Top-level name (``lint/`` -> ``lint``, ``api.py`` -> ``api``) -> the entry's whole text."""
    found: dict[str, str] = {}
    current = None
    for line in lines:
        match = ENTRY.match(line)
        if match and not line.startswith("   "):
            current = match.group(1)
            found[current] = line
        elif current is not None:
            found[current] += "\n" + line
    return found


def package_units() -> dict[str, list[str]]:
    """Each top-level unit -> its modules (empty for a plain module)."""
    units: dict[str, list[str]] = {}
    for path in PACKAGE.iterdir():
        if path.suffix == ".py":
            units[path.stem] = []
        elif (path / "__init__.py").is_file():
            units[path.name] = sorted(
                (p.stem if p.suffix == ".py" else p.name)
                for p in path.iterdir()
                if (p.suffix == ".py" and p.stem != "__init__" and not re.match(r"rc\d{3}_", p.stem))
                or (p / "__init__.py").is_file()
            )
    return units


def test_every_unit_and_module_of_the_package_is_listed():
    listed = entries(layout_block((ROOT / "README.md").read_text(encoding="utf-8")))
    text = "\n".join(listed.values())
    problems = []
    for unit, modules in package_units().items():
        if unit not in listed and not re.search(rf"\b{re.escape(unit)}\.py\b", text):
            problems.append(f"{unit} is not listed")
            continue
        entry = listed.get(unit, "")
        problems += [
            f"{unit}/{m} is not named in the {unit}/ entry" for m in modules if not re.search(rf"\b{m}\b", entry)
        ]
    assert not problems, "README Layout is out of date:\n" + "\n".join(problems)


def test_nothing_listed_is_gone():
    listed = entries(layout_block((ROOT / "README.md").read_text(encoding="utf-8")))
    units = package_units()
    assert not [name for name in listed if name not in units], "README Layout lists units that do not exist"


def test_the_check_notices_a_missing_module():
    lines = ["  lint/             config, runner", "                    engine"]
    assert entries(lines) == {"lint": "  lint/             config, runner\n                    engine"}
    assert not re.search(r"\bcache\b", entries(lines)["lint"])
