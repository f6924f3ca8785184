"""What every format parser produces and the writer consumes: plain dataclasses, no database.

A parser reads a file (or an EVA run folder) record by record and returns a `ParsedImport`.
Each record becomes a `ParsedConversation` or a `RecordError` naming the file, line and field, so
a bad line can fail the import (or be skipped with --skip-invalid) before anything is written.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, fields
from typing import Any

from reviewapp.corpus.importers.limits import INT32_MAX, language_problem, length_problem, slug_problem
from scoring.errors import TribunalError
from scoring.hedges import hedge_in
from scoring.strictjson import StrictJSONError, strict_loads

ROLE_ALIASES = {
    "user": "user",
    "human": "user",
    "caller": "user",
    "agent": "agent",
    "assistant": "agent",
    "bot": "agent",
    "tool_call": "tool_call",
    "tool_response": "tool_response",
    "system": "system",
}


@dataclass(frozen=True)
class RecordError(TribunalError):
    """One bad record: where it is (file, line, field) and what is wrong with it."""

    file: str
    line: int | None
    field: str
    message: str

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f" line {self.line}"
        if self.field:
            where += f" field {self.field}"
        return f"{where}: {self.message}"

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "field": self.field, "message": self.message}


@dataclass
class JudgeDefaults:
    """How to create a judge named by the file when it does not exist yet."""

    slug: str
    level: str = "turn"
    scale: str = "ordinal"
    scale_min: float | None = None
    scale_max: float | None = None


@dataclass(kw_only=True, slots=True)
class ParsedJudgement:
    """What a gold label and an imported verdict both say: a judge's answer on a turn (turn_position set)
    or on the whole conversation."""

    judge: str
    turn_position: int | None = None
    rating: float | None = None
    label: str = ""
    passed: bool | None = None

    def has_answer(self) -> bool:
        """At least one of rating, label, passed: nothing in Tribunal guesses an answer that has none."""
        return self.rating is not None or bool(self.label) or self.passed is not None

    def judge_defaults(self, level: str) -> JudgeDefaults:
        """How to create the judge it names: a pass or fail without a rating makes a binary judge."""
        scale = "binary" if self.rating is None and self.passed is not None else "ordinal"
        return JudgeDefaults(slug=self.judge, level=level, scale=scale)


@dataclass(kw_only=True, slots=True)
class ParsedLabel(ParsedJudgement):
    """A gold label."""

    failure_modes: list[str] = field(default_factory=list)
    excluded: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True, slots=True)
class ParsedVerdict(ParsedJudgement):
    """An imported judge output (tier=imported)."""

    version: str
    run_index: int = 0
    status: str = "resolved"
    flags: list[Any] = field(default_factory=list)
    sub_scores: dict[str, Any] = field(default_factory=dict)
    explanation: str = ""
    raw_text: str = ""
    problem_code: str = ""  # scoring.parsing.ProblemCode: "hedged" when an unresolved answer hedges

    def __post_init__(self) -> None:
        if self.status == "unresolved" and not self.problem_code and hedge_in(f"{self.explanation}\n{self.raw_text}"):
            self.problem_code = "hedged"


@dataclass(slots=True)
class ParsedTurn:
    position: int
    role: str
    text: str = ""
    intended_text: str = ""
    audio_start_ms: int | None = None
    audio_end_ms: int | None = None
    entities: list[Any] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(slots=True)
class ParsedConversation:
    external_id: str
    language: str
    line: int | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    turns: list[ParsedTurn] = field(default_factory=list)
    labels: list[ParsedLabel] = field(default_factory=list)
    verdicts: list[ParsedVerdict] = field(default_factory=list)
    # The checked audio file to copy into media storage (a Path, set by importers.audio), or None.
    audio_file: Any = None


def _names(record: type, *, leaving_out: tuple[str, ...] = ()) -> tuple[str, ...]:
    return tuple(item.name for item in fields(record) if item.name not in leaving_out)


# The values a parsed turn, label or verdict carries into its row, each named as its model's column; the
# rest of the row (the conversation, the turn a judgement targets, judge, version) the writer resolves.
TURN_VALUES = _names(ParsedTurn)
LABEL_VALUES = _names(ParsedLabel, leaving_out=("judge", "turn_position"))
VERDICT_VALUES = _names(ParsedVerdict, leaving_out=("judge", "version", "turn_position"))


@dataclass
class ParsedImport:
    """Everything one import will write, plus what was refused."""

    fmt: str
    source: str
    dataset_kind: str = "run"
    conversations: list[ParsedConversation] = field(default_factory=list)
    errors: list[RecordError] = field(default_factory=list)
    judges: dict[str, JudgeDefaults] = field(default_factory=dict)
    content_sha256: str = ""
    # Tribunal JSONL and CSV: a file whose records carry gold labels is a validation set.
    labels_make_validation: bool = False

    def add_judge(self, defaults: JudgeDefaults) -> None:
        self.judges.setdefault(defaults.slug, defaults)

    def collect(self, items: Iterable[ParsedConversation | RecordError]) -> ParsedImport:
        """Keep every streamed conversation and error in memory (the whole-input form of a parser)."""
        for item in items:
            if isinstance(item, RecordError):
                self.errors.append(item)
            else:
                self.conversations.append(item)
        self.note_labels(any(conversation.labels for conversation in self.conversations))
        return self

    def note_labels(self, seen: bool) -> None:
        if seen and self.labels_make_validation:
            self.dataset_kind = "validation"


# --- small validators shared by the format parsers -------------------------------------------------


def describe(value: Any) -> str:
    """A value as it appears in an error message: JSON, shortened."""
    try:
        text = json.dumps(value, ensure_ascii=False, default=str)
    except ValueError:  # an integer too long to print
        text = "a very long integer"
    return text if len(text) <= 80 else text[:77] + "..."


class FieldReader:
    """Reads typed fields of one record, raising RecordError with the record's file and line."""

    def __init__(self, file: str, line: int | None):
        self.file = file
        self.line = line

    def fail(self, field_name: str, message: str) -> RecordError:
        return RecordError(self.file, self.line, field_name, message)

    def string(self, value: Any, field_name: str, *, required: bool = False, limit: str | None = None) -> str:
        """A string (numbers are taken as their text); `limit` names a column length in LIMITS."""
        if value is None or value == "":
            if required:
                raise self.fail(field_name, "is required")
            return ""
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise self.fail(field_name, f"expected a string, got {describe(value)}")
        text = str(value)
        if limit is not None:
            problem = length_problem(text, limit)
            if problem:
                raise self.fail(field_name, problem)
        return text

    def language(self, value: Any, field_name: str, default: str | None) -> str:
        """A BCP 47 code from the record, else the import's default (itself checked), else en."""
        code = self.string(value, field_name).strip() or default or "en"
        problem = language_problem(code)
        if problem:
            raise self.fail(field_name if value not in (None, "") else "--language", problem)
        return code

    def judge(self, value: Any, field_name: str) -> str:
        slug = self.string(value, field_name, required=True).strip()
        problem = slug_problem(slug)
        if problem:
            raise self.fail(field_name, problem)
        return slug

    def integer(
        self, value: Any, field_name: str, *, low: int | None = None, high: int | None = None, required: bool = False
    ) -> int | None:
        if value is None or value == "":
            if required:
                raise self.fail(field_name, "is required")
            return None
        number: int | None = None
        if isinstance(value, bool):
            number = None
        elif isinstance(value, int):
            number = value
        elif (isinstance(value, float) and value.is_integer()) or (
            isinstance(value, str) and re.fullmatch(r"\s*-?\d{1,4000}\s*", value)
        ):
            number = int(value)
        if number is None or (low is not None and number < low) or (high is not None and number > high):
            raise self.fail(field_name, f"expected an integer{_range(low, high)}, got {describe(value)}")
        return number

    def number(self, value: Any, field_name: str) -> float | None:
        if value is None or value == "":
            return None
        if isinstance(value, bool):
            raise self.fail(field_name, f"expected a number, got {describe(value)}")
        number: float | None = None
        try:
            if isinstance(value, int | float | str):
                number = float(value)
        except (ValueError, OverflowError):
            number = None
        if number is not None and not math.isfinite(number):
            raise self.fail(field_name, f"expected a finite number, got {describe(value)}")
        if number is None:
            raise self.fail(field_name, f"expected a number, got {describe(value)}")
        return number

    def boolean(self, value: Any, field_name: str) -> bool | None:
        if value is None or value == "":
            return None
        if isinstance(value, bool):
            return value
        if isinstance(value, int) and value in (0, 1):
            return bool(value)
        if isinstance(value, str) and value.strip().lower() in BOOL_WORDS:
            return BOOL_WORDS[value.strip().lower()]
        raise self.fail(field_name, f"expected true or false, got {describe(value)}")

    def mapping(self, value: Any, field_name: str) -> dict[str, Any]:
        if value is None or value == "":
            return {}
        if isinstance(value, str):
            value = self.json_text(value, field_name)
        if not isinstance(value, dict):
            raise self.fail(field_name, f"expected an object, got {describe(value)}")
        return value

    def items(self, value: Any, field_name: str, *, required: bool = False) -> list[Any]:
        if value is None or value == "":
            if required:
                raise self.fail(field_name, "is required")
            return []
        if not isinstance(value, list):
            raise self.fail(field_name, f"expected a list, got {describe(value)}")
        return value

    def turn_objects(
        self, value: Any, field_name: str, *, position_key: str = "position", where: str = "this conversation"
    ) -> Iterator[tuple[str, int, dict[str, Any]]]:
        """(field prefix, position, object) for each turn object of a required list. The position is the
        object's `position_key`, else its index in the list; the same position twice is an error."""
        positions: set[int] = set()
        for index, raw in enumerate(self.items(value, field_name, required=True)):
            prefix = f"{field_name}[{index}]"
            if not isinstance(raw, dict):
                raise self.fail(prefix, f"expected an object, got {describe(raw)}")
            position = self.integer(raw.get(position_key), f"{prefix}.{position_key}", low=0, high=INT32_MAX)
            position = index if position is None else position
            if position in positions:
                raise self.fail(f"{prefix}.{position_key}", f"{position_key} {position} appears twice in {where}")
            positions.add(position)
            yield prefix, position, raw

    def json_text(self, text: str, field_name: str) -> Any:
        try:
            return strict_loads(text)
        except StrictJSONError as exc:
            inner = "" if not exc.path else exc.path if exc.path.startswith("[") else f".{exc.path}"
            raise self.fail(f"{field_name}{inner}", exc.message) from exc

    def role(self, value: Any, field_name: str) -> str:
        text = self.string(value, field_name, required=True).strip().lower()
        if text not in ROLE_ALIASES:
            raise self.fail(
                field_name, f"expected one of user, agent, tool_call, tool_response, system, got {describe(value)}"
            )
        return ROLE_ALIASES[text]

    def failure_modes(self, value: Any, field_name: str) -> list[str]:
        """A list, a comma-separated string, "" or null: always a list of non-empty strings."""
        if value is None:
            return []
        if isinstance(value, str):
            stripped = value.strip()
            if stripped.startswith("["):
                value = self.json_text(stripped, field_name)
            else:
                return [part.strip() for part in re.split(r"[,;]", stripped) if part.strip()]
        if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
            raise self.fail(
                field_name, f"expected a list of strings or a comma-separated string, got {describe(value)}"
            )
        return [item.strip() for item in value if item.strip()]


BOOL_WORDS = {
    "true": True,
    "yes": True,
    "1": True,
    "pass": True,
    "false": False,
    "no": False,
    "0": False,
    "fail": False,
}


def _range(low: int | None, high: int | None) -> str:
    if low is not None and high is not None:
        return f" {low}-{high}" if high - low > 1 else f" {low} or {high}"
    if low is not None:
        return f" >= {low}"
    if high is not None:
        return f" <= {high}"
    return ""


def compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=False, default=str)
