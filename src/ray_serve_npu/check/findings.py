"""What the checker reports."""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel


class Severity(str, Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class Finding(BaseModel):
    """One problem at one place in one file."""

    file: str
    line: int
    severity: Severity
    rule_id: str
    message: str
    fix: str

    def format(self) -> str:
        return (
            f"{self.file}:{self.line}: {self.severity.value} {self.rule_id}: "
            f"{self.message} (fix: {self.fix})"
        )
