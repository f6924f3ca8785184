"""Strict JSON: what every reader of outside input in Tribunal uses instead of `json.loads`.

Python's `json` accepts things that other parsers refuse or that the database cannot store, so an
import or a judge answer could carry them in silently. `strict_loads` refuses, with a code and the
path of the value at fault:

* ``non_finite``     NaN, Infinity, -Infinity, and numbers too large for a float (1e400);
* ``duplicate_key``  the same key twice in one object (`{"rating": 1, "rating": 3}`: which one?);
* ``bad_char``       a NUL character or a lone UTF-16 surrogate in a string or key (PostgreSQL
                     cannot store either; a surrogate is not a character);
* ``too_deep``       objects and lists nested deeper than `MAX_DEPTH` (never a RecursionError);
* ``too_long``       an integer literal of more than `MAX_INT_DIGITS` digits;
* ``bad_json``       anything `json` itself refuses (with its line and column).

Plain Python, no Django: scoring/parsing.py reads judge answers with it and the importers read files.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any

from scoring.errors import TribunalError

MAX_DEPTH = 64
MAX_INT_DIGITS = 4000
BAD_CHARS = re.compile("[\x00\ud800-\udfff]")

__all__ = ["MAX_DEPTH", "StrictJSONError", "bad_char_problem", "strict_loads"]


class StrictJSONError(TribunalError, ValueError):
    """Refused JSON: `code` says what kind of problem, `path` where (`turns[2].text`), `line`/`column`
    where in the text when known (1-based)."""

    def __init__(self, code: str, message: str, *, path: str = "", line: int | None = None, column: int | None = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.path = path
        self.line = line
        self.column = column


class _Refused:
    """Put in place of a refused value while decoding, so the walk afterwards can say where it was."""

    __slots__ = ("code", "message")

    def __init__(self, code: str, message: str):
        self.code, self.message = code, message


def _reject_constant(name: str) -> Any:
    return _Refused("non_finite", f"{name} is not a JSON number")


def _float(text: str) -> Any:
    value = float(text)
    if not math.isfinite(value):
        return _Refused("non_finite", f"{text} is too large for a number")
    return value


def _int(text: str) -> Any:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        return _Refused("too_long", f"an integer of {digits} digits is too long")
    return int(text)


def _pairs(pairs: list[tuple[str, Any]]) -> Any:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            return _Refused("duplicate_key", f"the key {key!r} appears twice in one object")
        result[key] = value
    return result


_DECODER = json.JSONDecoder(
    parse_float=_float, parse_int=_int, parse_constant=_reject_constant, object_pairs_hook=_pairs, strict=True
)


def bad_char_problem(text: str) -> str:
    """What is wrong with a string that a database column or JSON value must not hold, or ""."""
    match = BAD_CHARS.search(text)
    if match is None:
        return ""
    char = match.group()
    where = f"at character {match.start() + 1}"
    if char == "\x00":
        return f"contains a NUL character {where}"
    return f"contains a lone UTF-16 surrogate (U+{ord(char):04X}) {where}"


def _walk(value: Any) -> Iterator[tuple[str, Any, int]]:
    """(path, value, depth) of every value, iteratively (a deep document cannot overflow the stack)."""
    stack: list[tuple[str, Any, int]] = [("", value, 0)]
    while stack:
        path, item, depth = stack.pop()
        yield path, item, depth
        if isinstance(item, dict):
            for key, child in item.items():
                yield (f"{path}.{key}" if path else key), key, depth + 1
                stack.append(((f"{path}.{key}" if path else key), child, depth + 1))
        elif isinstance(item, list):
            for index, child in enumerate(item):
                stack.append((f"{path}[{index}]", child, depth + 1))


def check_value(value: Any) -> None:
    """Refuse too-deep nesting and bad characters anywhere in an already-decoded value."""
    for path, item, depth in _walk(value):
        if depth > MAX_DEPTH:
            shown = path if len(path) <= 60 else path[:57] + "..."
            raise StrictJSONError("too_deep", f"nested deeper than {MAX_DEPTH} levels", path=shown)
        if isinstance(item, _Refused):
            raise StrictJSONError(item.code, item.message, path=path)
        if isinstance(item, str):
            problem = bad_char_problem(item)
            if problem:
                raise StrictJSONError("bad_char", problem, path=path)


def strict_loads(text: str | bytes) -> Any:
    """Decode one JSON document strictly; raises StrictJSONError (a ValueError) on any refusal."""
    if isinstance(text, bytes | bytearray):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise StrictJSONError("bad_json", f"not UTF-8 (byte {exc.start + 1})") from exc
    try:
        value = _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise StrictJSONError(
            "bad_json",
            f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})",
            line=exc.lineno,
            column=exc.colno,
        ) from exc
    except RecursionError as exc:
        raise StrictJSONError("too_deep", f"nested deeper than {MAX_DEPTH} levels") from exc
    except ValueError as exc:
        if isinstance(exc, StrictJSONError):
            raise
        raise StrictJSONError("bad_json", f"not valid JSON ({exc})") from exc
    check_value(value)
    return value
