"""Result dataclasses as plain data (JSON output, API responses): one way to write their as_dict()."""

from __future__ import annotations

from dataclasses import fields
from typing import Any


def plain(value: Any) -> Any:
    """A nested result as its own as_dict(), a tuple as a list, anything else as it is."""
    if hasattr(value, "as_dict"):
        return value.as_dict()
    if isinstance(value, tuple):
        return list(value)
    return value


def record_dict(record: Any, *names: str) -> dict[str, Any]:
    """The attributes `names` of a result (fields or computed properties), in that order, keyed by name;
    without names, every dataclass field in declaration order."""
    return {name: plain(getattr(record, name)) for name in names or [f.name for f in fields(record)]}
