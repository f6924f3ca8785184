"""Turn a judge's raw answer into a JudgeResult, never guessing.

The answer must be one JSON object: the whole reply, or the whole reply wrapped in a single
```json (or bare ```) fence. No prose around it, no hunting for the first brace, no NaN/Infinity.
Anything else is ``unresolved`` with the problem named; an unresolved result never carries a
rating or a pass/fail, and it is never 0.

Every unresolved result carries a ``problem_code`` (ProblemCode below) for triage and pages, beside
the ``problem`` in words for people (docs/answers.md).

Unresolved when:
* the text is not a JSON object (or several fences, or text around the fence), or is not strict JSON
  (scoring.strictjson: a key given twice, NaN/Infinity, NUL, a lone surrogate, deep nesting);
* the answer flags itself uncertain, whatever the JSON type (``uncertain_flag``), or gives a rating
  of null (the judge declined to decide, whatever it explains);
* its explanation hedges about the rating ("I'm not sure, maybe 2?": scoring.hedges);
* a required key of the spec is missing;
* a rating is not a number (strings and booleans included), not a whole scale point for
  binary/ordinal judges, or outside the scale;
* a weighted judge lacks a sub-metric or scores one outside 0..100 or with a non-number;
* a rubric judge lacks a criterion, or says ``passed`` in contradiction with its own score.

Unknown failure modes (not listed in the spec) do not make the answer unresolved: the rating is
still a decision the judge made. They are kept as the flag ``unknown_failure_mode:<name>`` so the
prompt owner can see the judge inventing categories and either add them or tighten the prompt.
Likewise failure modes on a top rating are flagged ``failure_modes_on_top_rating``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from scoring.hedges import hedge_in
from scoring.rubric import rubric_aggregate, weighted_aggregate
from scoring.specs import JudgeSpec
from scoring.strictjson import StrictJSONError, strict_loads


class ResultStatus(StrEnum):
    """Whether the judge's answer decided the rating (a str, so it is stored and compared as its value)."""

    RESOLVED = "resolved"
    UNRESOLVED = "unresolved"


RESOLVED = ResultStatus.RESOLVED
UNRESOLVED = ResultStatus.UNRESOLVED


class ProblemCode(StrEnum):
    """Why an answer is unresolved, as a code that triage and pages read (the prose is for people)."""

    NONE = ""  # resolved
    EMPTY = "empty"  # no answer text
    BAD_JSON = "bad_json"  # not one JSON object (prose, several fences, syntax error)
    DUPLICATE_KEY = "duplicate_key"  # the same key twice: which value did the judge mean?
    NON_FINITE = "non_finite"  # NaN, Infinity or a number too large
    BAD_CHAR = "bad_char"  # NUL or a lone surrogate in a string
    TOO_DEEP = "too_deep"  # nesting deeper than scoring.strictjson.MAX_DEPTH
    NOT_OBJECT = "not_object"  # JSON, but not an object
    UNCERTAIN = "uncertain"  # the judge flagged itself uncertain, or gave a null rating
    HEDGED = "hedged"  # the explanation hedges about the rating ("maybe 2?", "hard to say")
    MISSING_KEY = "missing_key"  # a required key, sub-metric or criterion is missing
    BAD_TYPE = "bad_type"  # a value of the wrong type (a string rating, a non-list of failure modes)
    OUT_OF_RANGE = "out_of_range"  # a rating or score outside the scale, or not a whole scale point
    CONTRADICTION = "contradiction"  # a rubric criterion whose passed contradicts its score
    INVALID = "invalid"  # any other refusal


# Codes that mean "the judge itself would not decide": triage sends these to people as uncertain.
UNCERTAIN_CODES: frozenset[ProblemCode] = frozenset({ProblemCode.UNCERTAIN, ProblemCode.HEDGED})
# Where else a judge explains itself: a hedge there counts as much as in `explanation`.
REASONING_KEYS = ("reasoning", "rationale", "justification", "analysis")
# `uncertain` values that mean "no": anything else (true, 1, "true", "yes", "maybe", 0.5 ...) is uncertain.
CERTAIN_VALUES = (False, 0, None, "", "false", "no", "0", "n", "f")

_FENCE = re.compile(r"^```[ \t]*(?:json|JSON)?[ \t]*\n(?P<body>.*?)\n?```$", re.DOTALL)


@dataclass(frozen=True)
class JudgeResult:
    status: ResultStatus
    rating: float | None = None
    label: str = ""
    passed: bool | None = None
    flags: tuple[str, ...] = ()
    sub_scores: Mapping[str, float] = field(default_factory=dict)
    explanation: str = ""
    problem: str = ""
    problem_code: ProblemCode = ProblemCode.NONE

    def __post_init__(self) -> None:
        # Codes given as their text (records read back, EVA's parsers) become the enum; an unknown one raises.
        object.__setattr__(self, "status", ResultStatus(self.status))
        object.__setattr__(self, "problem_code", ProblemCode(self.problem_code))

    @property
    def resolved(self) -> bool:
        return self.status == RESOLVED

    @property
    def uncertain(self) -> bool:
        return self.problem_code in UNCERTAIN_CODES


def unresolved(
    problem: str,
    *,
    explanation: str = "",
    flags: tuple[str, ...] = (),
    code: ProblemCode | str = ProblemCode.INVALID,
) -> JudgeResult:
    return JudgeResult(
        status=UNRESOLVED, problem=problem, explanation=explanation, flags=flags, problem_code=ProblemCode(code)
    )


class _AnswerProblem(Exception):
    def __init__(self, message: str, code: ProblemCode | str = ProblemCode.INVALID):
        super().__init__(message)
        self.code = ProblemCode(code)


def extract_json_object(raw_text: str) -> dict[str, Any]:
    """The answer's JSON object. Raises _AnswerProblem naming what is wrong."""
    data = extract_json_value(raw_text)
    if not isinstance(data, dict):
        raise _AnswerProblem(f"expected a JSON object, got a JSON {type(data).__name__}", ProblemCode.NOT_OBJECT)
    return data


def extract_json_value(raw_text: str) -> Any:
    """The answer's JSON value (whole reply, or one ``` fence), read strictly (scoring.strictjson):
    duplicate keys, NaN/Infinity, NUL, lone surrogates and deep nesting are refused with their code."""
    text = (raw_text or "").strip()
    if not text:
        raise _AnswerProblem("empty answer", ProblemCode.EMPTY)
    if text.startswith("```"):
        match = _FENCE.match(text)
        if match is None:
            raise _AnswerProblem("the ``` fence is not closed, or text follows it", ProblemCode.BAD_JSON)
        text = match.group("body").strip()
        if "```" in text:
            raise _AnswerProblem("more than one fenced block", ProblemCode.BAD_JSON)
    try:
        return strict_loads(text)
    except StrictJSONError as exc:
        at = f" at {exc.path}" if exc.path and exc.code != "duplicate_key" else ""
        raise _AnswerProblem(f"{exc.message}{at}", exc.code) from exc


def uncertain_flag(data: Mapping[str, Any]) -> bool:
    """True when the answer flags itself uncertain, whatever the JSON type (`uncertain` or `unsure`):
    false, 0, null, "" and the strings false/no/0/n/f (any case) mean certain; every other value -
    true, 1, "true", "yes", "maybe", 0.5, a list - is a judge unsure of its answer."""
    for key in (ProblemCode.UNCERTAIN, "unsure"):
        if key not in data:
            continue
        value = data[key]
        if isinstance(value, str):
            value = value.strip().lower()
        if isinstance(value, bool) or value is None:
            if value:
                return True
            continue
        if value not in CERTAIN_VALUES:
            return True
    return False


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _string_list(data: Mapping[str, Any], key: str) -> list[str]:
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _AnswerProblem(f"{key!r} must be a list of strings", ProblemCode.BAD_TYPE)
    return [v.strip() for v in value if v.strip()]


def _explanation(data: Mapping[str, Any]) -> str:
    value = data.get("explanation")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _AnswerProblem("'explanation' must be a string", ProblemCode.BAD_TYPE)
    return value.strip()


def _shorten(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parse_answer(spec: JudgeSpec, raw_text: str) -> JudgeResult:
    """Parse one answer for ``spec``. Never raises on bad model output."""
    explanation = ""
    try:
        data = extract_json_object(raw_text)
        explanation = _explanation(data)
        if uncertain_flag(data):
            return unresolved(
                f"the judge said it is uncertain: {_shorten(explanation)}",
                explanation=explanation,
                code=ProblemCode.UNCERTAIN,
            )
        hedge = hedge_in("\n".join([explanation, *(data[k] for k in REASONING_KEYS if isinstance(data.get(k), str))]))
        if hedge:
            return unresolved(
                f"the explanation hedges about the answer ({hedge!r}): {_shorten(explanation)}",
                explanation=explanation,
                code=ProblemCode.HEDGED,
            )
        missing = [key for key in spec.required_keys if key not in data]
        if missing:
            return unresolved(
                f"missing required key(s): {', '.join(missing)}", explanation=explanation, code="missing_key"
            )
        flags = _flags(spec, data)
        if spec.scale == "weighted":
            return _weighted(spec, data, explanation, flags)
        if spec.scale == "rubric":
            return _rubric(spec, data, explanation, flags)
        return _rated(spec, data, explanation, flags)
    except _AnswerProblem as exc:
        return unresolved(str(exc), explanation=explanation, code=exc.code)


def _flags(spec: JudgeSpec, data: Mapping[str, Any]) -> list[str]:
    flags: list[str] = []
    known = set(spec.failure_modes)
    for mode in _string_list(data, "failure_modes"):
        if known and mode not in known:
            flags.append(f"unknown_failure_mode:{mode}")
        else:
            flags.append(mode)
    for flag in _string_list(data, "flags"):
        if flag not in flags:
            flags.append(flag)
    return flags


def _rating(spec: JudgeSpec, data: Mapping[str, Any], explanation: str) -> float:
    if "rating" not in data:
        raise _AnswerProblem("missing required key(s): rating", ProblemCode.MISSING_KEY)
    value = data["rating"]
    if value is None:
        said = f": {_shorten(explanation)}" if explanation else ""
        raise _AnswerProblem(f"the judge gave no rating (rating is null){said}", ProblemCode.UNCERTAIN)
    if not _is_number(value):
        raise _AnswerProblem(f"rating {value!r} is not a number", ProblemCode.BAD_TYPE)
    rating = float(value)
    if spec.scale in ("binary", "ordinal") and not rating.is_integer():
        raise _AnswerProblem(
            f"rating {value!r} is not a whole point of the {spec.scale} scale", ProblemCode.OUT_OF_RANGE
        )
    low = 0.0 if spec.scale == "binary" and spec.scale_min is None else spec.scale_min
    high = 1.0 if spec.scale == "binary" and spec.scale_max is None else spec.scale_max
    if (low is not None and rating < low) or (high is not None and rating > high):
        raise _AnswerProblem(f"rating {value!r} is outside the scale {low:g}..{high:g}", ProblemCode.OUT_OF_RANGE)
    return rating


def _rated(spec: JudgeSpec, data: Mapping[str, Any], explanation: str, flags: list[str]) -> JudgeResult:
    rating = _rating(spec, data, explanation)
    top = 1.0 if spec.scale == "binary" else spec.scale_max
    if top is not None and rating == top and any(f in spec.failure_modes for f in flags):
        flags.append("failure_modes_on_top_rating")
    passed: bool | None
    if spec.scale == "binary":
        passed = rating == 1.0
        label = spec.rating_labels.get(str(int(rating)), "pass" if passed else "fail")
    else:
        passed = None if spec.pass_threshold is None else rating >= spec.pass_threshold
        label = spec.rating_labels.get(str(int(rating)) if rating.is_integer() else str(rating), f"{rating:g}")
    return JudgeResult(
        status=RESOLVED, rating=rating, label=label, passed=passed, flags=tuple(flags), explanation=explanation
    )


def _weighted(spec: JudgeSpec, data: Mapping[str, Any], explanation: str, flags: list[str]) -> JudgeResult:
    raw = data.get("sub_scores")
    if not isinstance(raw, dict):
        raise _AnswerProblem("'sub_scores' must be an object of sub-metric scores", ProblemCode.BAD_TYPE)
    missing = [name for name in spec.sub_metrics if name not in raw]
    if missing:
        raise _AnswerProblem(f"missing sub-metric(s): {', '.join(missing)}", ProblemCode.MISSING_KEY)
    scores: dict[str, float] = {}
    for name in spec.sub_metrics:
        value = raw[name]
        if value is None:
            raise _AnswerProblem(f"sub-metric {name} has no score (null)", ProblemCode.UNCERTAIN)
        if not _is_number(value):
            raise _AnswerProblem(f"sub-metric {name} score {value!r} is not a number", ProblemCode.BAD_TYPE)
        if not 0 <= value <= 100:
            raise _AnswerProblem(f"sub-metric {name} score {value!r} is outside 0..100", ProblemCode.OUT_OF_RANGE)
        scores[name] = float(value)
    flags.extend(f"unknown_sub_metric:{name}" for name in raw if name not in spec.sub_metrics)
    outcome = weighted_aggregate(
        scores,
        spec.sub_metrics,
        critical=spec.critical_sub_metrics,
        thresholds=spec.sub_metric_thresholds,
        pass_threshold=spec.pass_threshold,
    )
    flags.extend(f"critical_failed:{name}" for name in outcome.failed_critical)
    label = "" if outcome.passed is None else ("pass" if outcome.passed else "fail")
    if outcome.failed_critical:
        label = f"fail:{outcome.failed_critical[0]}"
    return JudgeResult(
        status=RESOLVED,
        rating=outcome.overall,
        label=label,
        passed=outcome.passed,
        flags=tuple(flags),
        sub_scores=scores,
        explanation=explanation,
    )


def _criterion_score(name: str, threshold: float, value: Any) -> float:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if _is_number(value):
        return float(value)
    if not isinstance(value, dict):
        raise _AnswerProblem(f"criterion {name} must be an object with 'score' and/or 'passed'", ProblemCode.BAD_TYPE)
    score, said = value.get("score"), value.get("passed")
    if score is None and said is None:
        raise _AnswerProblem(f"criterion {name} has neither a score nor passed", ProblemCode.MISSING_KEY)
    if said is not None and not isinstance(said, bool):
        raise _AnswerProblem(f"criterion {name} 'passed' must be true or false", ProblemCode.BAD_TYPE)
    if score is None:
        return 1.0 if said else 0.0
    if not _is_number(score):
        raise _AnswerProblem(f"criterion {name} score {score!r} is not a number", ProblemCode.BAD_TYPE)
    if said is not None and said != (float(score) >= threshold):
        raise _AnswerProblem(
            f"criterion {name}: passed={str(said).lower()} contradicts score {score!r}", "contradiction"
        )
    return float(score)


def _rubric(spec: JudgeSpec, data: Mapping[str, Any], explanation: str, flags: list[str]) -> JudgeResult:
    raw = data.get("criteria")
    if not isinstance(raw, dict):
        raise _AnswerProblem("'criteria' must be an object of criterion results", ProblemCode.BAD_TYPE)
    missing = [c.name for c in spec.criteria if c.name not in raw]
    if missing:
        raise _AnswerProblem(f"missing criterion result(s): {', '.join(missing)}", ProblemCode.MISSING_KEY)
    scores = {c.name: _criterion_score(c.name, c.threshold, raw[c.name]) for c in spec.criteria}
    flags.extend(f"unknown_criterion:{name}" for name in raw if name not in scores)
    outcome = rubric_aggregate(spec.criteria, scores)
    flags.extend(f"required_failed:{name}" for name in outcome.failed_required)
    return JudgeResult(
        status=RESOLVED,
        rating=outcome.diagnostic,
        label="pass" if outcome.passed else "fail",
        passed=outcome.passed,
        flags=tuple(flags),
        sub_scores=scores,
        explanation=explanation,
    )
