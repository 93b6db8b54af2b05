"""The finding model every check reports through."""
from __future__ import annotations

from dataclasses import dataclass, field

from validator.secrets import redact

SEVERITIES = ("error", "warning", "info")


@dataclass(frozen=True, order=True)
class Finding:
    path: str
    line: int
    col: int
    severity: str
    rule: str
    message: str
    # Unusable input (unreadable, not text, not YAML): exit code 2 instead of 1.
    unusable: bool = field(default=False, compare=False)

    def __post_init__(self):
        # a message may quote a directive or a command: it never repeats a credential
        object.__setattr__(self, "message", redact(self.message))

    def as_text(self) -> str:
        return f"{self.path}:{self.line}:{self.col}: {self.severity}: {self.message} [{self.rule}]"

    def as_dict(self) -> dict:
        return {
            "path": self.path,
            "line": self.line,
            "col": self.col,
            "severity": self.severity,
            "rule": self.rule,
            "message": self.message,
        }


class InternalFailure(Exception):
    """A tool we depend on (shellcheck) is missing or crashed: exit code 3."""
