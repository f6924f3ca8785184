"""Reading outside files strictly: encodings, strict JSON, column limits, language codes, folders.

Every importer reads through these helpers, so a bad input is refused the same way everywhere, with
the file, the line and the field in the message (`RecordError`), before anything is written:

* text must be UTF-8 (a UTF-8 byte order mark is skipped); a UTF-16 or UTF-32 file (with or without
  a byte order mark), a Latin-1 byte, or a NUL byte is refused with its line number;
* JSON is `scoring.strictjson.strict_loads`: no NaN/Infinity, no duplicate keys, no NUL or lone
  surrogate, no nesting deeper than 64 levels;
* strings that go to a column are checked against the column's length (`LIMITS`), integers against
  the column's range: nothing is ever truncated or wrapped;
* a language must be a BCP 47 tag (language[-script][-region][-variant...]);
* an import folder must not contain a symbolic link, and nothing outside it is read.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from reviewapp.corpus.importers.records import RecordError
from scoring.strictjson import MAX_DEPTH, StrictJSONError, strict_loads

UTF16_BOMS = {b"\xff\xfe": "UTF-16 (little-endian)", b"\xfe\xff": "UTF-16 (big-endian)"}
UTF32_BOMS = {b"\xff\xfe\x00\x00": "UTF-32 (little-endian)", b"\x00\x00\xfe\xff": "UTF-32 (big-endian)"}
UTF8_BOM = b"\xef\xbb\xbf"


# --- text files -----------------------------------------------------------------------------------


def _encoding_refusal(head: bytes) -> str:
    for bom, name in UTF32_BOMS.items():
        if head.startswith(bom):
            return f"the file is {name} (byte order mark): save it as UTF-8"
    for bom, name in UTF16_BOMS.items():
        if head.startswith(bom):
            return f"the file is {name} (byte order mark): save it as UTF-8"
    pairs = head[:64]
    if len(pairs) >= 4 and (pairs[1::2].count(0) >= len(pairs) // 4 or pairs[0::2].count(0) >= len(pairs) // 4):
        return "the file looks like UTF-16 (every other byte is NUL): save it as UTF-8"
    return ""


@dataclass
class ReadProgress:
    """How many bytes of the input have been read so far (for the import job's progress bar)."""

    done: int = 0
    total: int = 0

    def percent(self) -> float:
        return 100.0 * self.done / self.total if self.total else 0.0


def text_lines(path: Path, display: str) -> Iterator[tuple[int, str]]:
    """(line number, text with its line ending) of a UTF-8 file; RecordError at the first bad line."""
    with path.open("rb") as handle:
        head = handle.read(64)
        handle.seek(0)
        refusal = _encoding_refusal(head)
        if refusal:
            raise RecordError(display, 1, "(file)", refusal)
        for number, raw in enumerate(handle, start=1):
            if number == 1 and raw.startswith(UTF8_BOM):
                raw = raw[len(UTF8_BOM) :]
            yield number, decode_line(raw, display, number)


def decode_line(raw: bytes, display: str, number: int) -> str:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        byte = raw[exc.start]
        guess = " (Latin-1 or Windows-1252?)" if byte >= 0x80 else ""
        raise RecordError(
            display,
            number,
            "(line)",
            f"not UTF-8: byte 0x{byte:02x} at column {exc.start + 1}{guess}; save the file as UTF-8",
        ) from exc
    nul = text.find("\x00")
    if nul >= 0:
        raise RecordError(display, number, "(line)", f"contains a NUL byte at column {nul + 1}")
    return text


def json_lines(
    path: Path, display: str, progress: ReadProgress | None = None
) -> Iterator[tuple[int, Any] | RecordError]:
    """(line number, decoded value) per non-blank line, or the RecordError of a line that is refused.

    The file is read a line at a time (memory does not grow with its size); `progress.done` counts the
    bytes read. A file that is not UTF-8 at all (UTF-16, UTF-32) raises at once: no line of it can be read.
    """
    with path.open("rb") as handle:
        refusal = _encoding_refusal(handle.read(64))
        if refusal:
            raise RecordError(display, 1, "(file)", refusal)
        handle.seek(0)
        for number, raw in enumerate(handle, start=1):
            if progress is not None:
                progress.done += len(raw)
            if number == 1 and raw.startswith(UTF8_BOM):
                raw = raw[len(UTF8_BOM) :]
            try:
                text = decode_line(raw, display, number)
                if not text or text.isspace():  # blank (strip() would copy the whole line)
                    continue
                yield number, json_value(text, display, number)
            except RecordError as error:
                yield error


def read_text(path: Path, display: str) -> str:
    return "".join(text for _, text in text_lines(path, display))


# Every string token of a JSON text; group 1 is set when the string is an object key. Outside strings
# JSON has no quote, so scanning string after string from the left never starts inside one.
_STRING_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"(\s*:)?')
# An integer orjson would read as a float (it keeps 64 bits), where Python's json keeps it exact.
_LONG_DIGITS = re.compile(r"\d{19}")


def _key_count(text: str | bytes) -> int:
    found = _STRING_TOKEN.findall(text if isinstance(text, str) else text.decode("utf-8"))
    return len(found) - found.count("")


def _depth(value: Any) -> int:
    deepest, stack = 0, [(value, 0)]
    while stack:
        item, depth = stack.pop()
        deepest = max(deepest, depth)
        if isinstance(item, dict):
            stack.extend((child, depth + 1) for child in item.values())
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
    return deepest


def _same_keys(text: str, dumped: bytes, escaped: bool = True) -> bool:
    """Did decoding keep every key of `text`? orjson keeps the last of two equal keys without a word;
    `dumped` (orjson's compact text of the value) then holds fewer strings than `text` does.

    Outside strings JSON has no quote, and inside one a quote is written `\\"` (one quote character) by
    both, unless `text` spells it `\\u0022`. So without that spelling each text has two quotes per
    string (keys included) plus the quotes inside strings, and a dropped key takes at least its own two
    with it: equal counts mean nothing was dropped. Counting one character is a fraction of the cost
    of looking for the pairs that tell a key from a value (`_key_count`). `escaped`: whether `text`
    holds a backslash at all (without one it cannot spell an escape)."""
    if not escaped or "\\u0022" not in text:
        return text.count('"') == dumped.count(b'"')
    return _key_count(text) == _key_count(dumped)


def fast_loads(text: str) -> Any:
    """`strict_loads` at orjson's speed: the same values and the same refusals.

    orjson already refuses NaN/Infinity, numbers too large for a float, lone surrogates and invalid
    JSON; what it would let through is checked here (a key twice in one object, a NUL character,
    nesting deeper than MAX_DEPTH, an integer past 64 bits, which it reads as a float) and such a
    text, or any text orjson refuses, is decoded again by `strict_loads`, which accepts it or says
    exactly what is wrong.
    """
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return strict_loads(text)
    dumped = orjson.dumps(value)
    # A NUL, and a quote spelled \\u0022, can only come from an escape: without a backslash in the
    # text neither is looked for. An exponent in orjson's text needs a "+": one byte found with
    # memchr before the two are looked for (a two-byte search took 2.6 us of a 2 KB line's 15).
    escaped = "\\" in text
    if (
        (escaped and dumped.find(b"\\u0000") >= 0)
        or (dumped.find(b"+") >= 0 and dumped.find(b"e+") >= 0 and _LONG_DIGITS.search(text))
        or (text.count("{") + text.count("[") > MAX_DEPTH and _depth(value) > MAX_DEPTH)
        or not _same_keys(text, dumped, escaped)
    ):
        return strict_loads(text)
    return value


def json_value(text: str, display: str, line: int | None) -> Any:
    """Decode a JSON document (a whole file when line is None, else one line), naming file and line."""
    try:
        return fast_loads(text)
    except StrictJSONError as exc:
        where = line if line is not None else exc.line
        raise RecordError(display, where, exc.path or "(line)", exc.message) from exc


def json_file(path: Path, display: str) -> Any:
    return json_value(read_text(path, display), display, None)


# --- folders --------------------------------------------------------------------------------------


def check_folder(root: Path, display: str) -> None:
    """Refuse a folder with a symbolic link anywhere inside it (or being one): nothing outside is read."""
    if root.is_symlink():
        raise RecordError(display, None, "PATH", "is a symbolic link: import the folder it points to instead")
    base = root.resolve()
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in [*dirs, *files]:
            entry = Path(folder) / name
            relative = entry.relative_to(root)
            if entry.is_symlink():
                raise RecordError(
                    str(relative), None, "(file)", "is a symbolic link: an import folder may hold only real files"
                )
            if not entry.resolve().is_relative_to(base):
                raise RecordError(str(relative), None, "(file)", "lies outside the import folder")
