"""The values every part of the tool passes around: where a finding is, what it says, how to fix it.

Columns are 1-based and count characters (not UTF-8 bytes), like ruff's JSON output, so editors
and CI annotations point at the right place on non-ASCII lines.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

RULES_URL = "https://github.com/regcomp-lint/regcomp-lint/blob/main/rules/{code}.md"


@dataclass(frozen=True, order=True)
class Location:
    row: int  # 1-based line
    column: int  # 1-based character column

    def to_json(self) -> dict:
        return {"row": self.row, "column": self.column}


class Applicability(str, enum.Enum):
    """How far a fix can be trusted (ruff's three levels).

    SAFE keeps behaviour and is applied by default; UNSAFE may change behaviour and needs
    ``--unsafe-fixes``; DISPLAY is shown to the user but never applied automatically.
    """

    SAFE = "safe"
    UNSAFE = "unsafe"
    DISPLAY = "display"


class Severity(str, enum.Enum):
    """How much a finding matters (ruff's and SARIF's levels); each rule declares one.

    ERROR: the configuration fails or silently does the wrong thing at run time. WARNING: it runs,
    but a graph break or recompile costs speed. INFO: advice worth reading, such as a faster way.
    """

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"

    @property
    def rank(self) -> int:
        """Higher is more severe: ``finding.severity.rank >= threshold.rank`` fails a run."""
        return {"info": 0, "warning": 1, "error": 2}[self.value]

    @property
    def sarif_level(self) -> str:
        return {"info": "note", "warning": "warning", "error": "error"}[self.value]

    @property
    def github_command(self) -> str:
        """The GitHub Actions workflow command for an annotation of this severity."""
        return {"info": "notice", "warning": "warning", "error": "error"}[self.value]


@dataclass(frozen=True)
class Edit:
    """Replace the text between two locations (end exclusive) with ``content``."""

    content: str
    location: Location
    end_location: Location

    def to_json(self) -> dict:
        return {
            "content": self.content,
            "location": self.location.to_json(),
            "end_location": self.end_location.to_json(),
        }


@dataclass(frozen=True)
class Fix:
    applicability: Applicability
    message: str
    edits: tuple[Edit, ...]

    def to_json(self) -> dict:
        return {
            "applicability": self.applicability.value,
            "message": self.message,
            "edits": [edit.to_json() for edit in self.edits],
        }


@dataclass(frozen=True)
class Diagnostic:
    code: str
    name: str
    message: str
    filename: str
    location: Location
    end_location: Location
    fix: Fix | None = None
    url: str = field(default="")
    severity: Severity = Severity.ERROR

    @property
    def fixable(self) -> bool:
        return self.fix is not None and self.fix.applicability is not Applicability.DISPLAY

    def sort_key(self) -> tuple:
        return (self.filename, self.location, self.code)

    def to_json(self) -> dict:
        """ruff-compatible JSON object (plus ``name``)."""
        return {
            "code": self.code,
            "name": self.name,
            "severity": self.severity.value,
            "message": self.message,
            "filename": self.filename,
            "location": self.location.to_json(),
            "end_location": self.end_location.to_json(),
            "fix": self.fix.to_json() if self.fix else None,
            "url": self.url or RULES_URL.format(code=self.code),
            "noqa_row": self.location.row,
        }

    @classmethod
    def from_json(cls, data: dict) -> Diagnostic:
        fix = data.get("fix")
        return cls(
            code=data["code"],
            name=data["name"],
            message=data["message"],
            filename=data["filename"],
            location=Location(**data["location"]),
            end_location=Location(**data["end_location"]),
            fix=None
            if fix is None
            else Fix(
                applicability=Applicability(fix["applicability"]),
                message=fix["message"],
                edits=tuple(
                    Edit(
                        content=e["content"],
                        location=Location(**e["location"]),
                        end_location=Location(**e["end_location"]),
                    )
                    for e in fix["edits"]
                ),
            ),
            url=data.get("url", ""),
            severity=Severity(data.get("severity", Severity.ERROR.value)),
        )
