"""Turn a judge's raw answer into a JudgeResult, never guessing.

The answer must be one JSON object: the whole reply, or the whole reply wrapped in a single
```json (or bare ```) fence. No prose around it, no hunting for the first brace, no NaN/Infinity.
Anything else is ``unresolved`` with the problem named; an unresolved result never carries a
rating or a pass/fail, and it is never 0.

Unresolved when:
* the text is not a JSON object (or several fences, or text around the fence);
* ``"uncertain": true``, or a rating of null (the judge declined to decide, whatever it explains);
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

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .rubric import rubric_aggregate, weighted_aggregate
from .specs import JudgeSpec

RESOLVED = "resolved"
UNRESOLVED = "unresolved"

_FENCE = re.compile(r"^```[ \t]*(?:json|JSON)?[ \t]*\n(?P<body>.*?)\n?```$", re.DOTALL)


@dataclass(frozen=True)
class JudgeResult:
    status: str
    rating: float | None = None
    label: str = ""
    passed: bool | None = None
    flags: tuple[str, ...] = ()
    sub_scores: Mapping[str, float] = field(default_factory=dict)
    explanation: str = ""
    problem: str = ""

    @property
    def resolved(self) -> bool:
        return self.status == RESOLVED


def unresolved(problem: str, *, explanation: str = "", flags: tuple[str, ...] = ()) -> JudgeResult:
    return JudgeResult(status=UNRESOLVED, problem=problem, explanation=explanation, flags=flags)


class _AnswerProblem(Exception):
    pass


def _reject_constant(name: str) -> Any:
    raise _AnswerProblem(f"{name} is not a JSON number")


def extract_json_object(raw_text: str) -> dict[str, Any]:
    """The answer's JSON object. Raises _AnswerProblem naming what is wrong."""
    data = extract_json_value(raw_text)
    if not isinstance(data, dict):
        raise _AnswerProblem(f"expected a JSON object, got a JSON {type(data).__name__}")
    return data


def extract_json_value(raw_text: str) -> Any:
    """The answer's JSON value (the whole reply, or one ``` fence). Raises _AnswerProblem."""
    text = (raw_text or "").strip()
    if not text:
        raise _AnswerProblem("empty answer")
    if text.startswith("```"):
        match = _FENCE.match(text)
        if match is None:
            raise _AnswerProblem("the ``` fence is not closed, or text follows it")
        text = match.group("body").strip()
        if "```" in text:
            raise _AnswerProblem("more than one fenced block")
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise _AnswerProblem(f"not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from exc


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _string_list(data: Mapping[str, Any], key: str) -> list[str]:
    value = data.get(key)
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise _AnswerProblem(f"{key!r} must be a list of strings")
    return [v.strip() for v in value if v.strip()]


def _explanation(data: Mapping[str, Any]) -> str:
    value = data.get("explanation")
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _AnswerProblem("'explanation' must be a string")
    return value.strip()


def _shorten(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parse_answer(spec: JudgeSpec, raw_text: str) -> JudgeResult:
    """Parse one answer for ``spec``. Never raises on bad model output."""
    explanation = ""
    try:
        data = extract_json_object(raw_text)
        explanation = _explanation(data)
        if data.get("uncertain") is True:
            return unresolved(f"the judge said it is uncertain: {_shorten(explanation)}", explanation=explanation)
        missing = [key for key in spec.required_keys if key not in data]
        if missing:
            return unresolved(f"missing required key(s): {', '.join(missing)}", explanation=explanation)
        flags = _flags(spec, data)
        if spec.scale == "weighted":
            return _weighted(spec, data, explanation, flags)
        if spec.scale == "rubric":
            return _rubric(spec, data, explanation, flags)
        return _rated(spec, data, explanation, flags)
    except _AnswerProblem as exc:
        return unresolved(str(exc), explanation=explanation)


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
        raise _AnswerProblem("missing required key(s): rating")
    value = data["rating"]
    if value is None:
        said = f": {_shorten(explanation)}" if explanation else ""
        raise _AnswerProblem(f"the judge gave no rating (rating is null){said}")
    if not _is_number(value):
        raise _AnswerProblem(f"rating {value!r} is not a number")
    rating = float(value)
    if spec.scale in ("binary", "ordinal") and not rating.is_integer():
        raise _AnswerProblem(f"rating {value!r} is not a whole point of the {spec.scale} scale")
    low = 0.0 if spec.scale == "binary" and spec.scale_min is None else spec.scale_min
    high = 1.0 if spec.scale == "binary" and spec.scale_max is None else spec.scale_max
    if (low is not None and rating < low) or (high is not None and rating > high):
        raise _AnswerProblem(f"rating {value!r} is outside the scale {low:g}..{high:g}")
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
        raise _AnswerProblem("'sub_scores' must be an object of sub-metric scores")
    missing = [name for name in spec.sub_metrics if name not in raw]
    if missing:
        raise _AnswerProblem(f"missing sub-metric(s): {', '.join(missing)}")
    scores: dict[str, float] = {}
    for name in spec.sub_metrics:
        value = raw[name]
        if value is None:
            raise _AnswerProblem(f"sub-metric {name} has no score (null)")
        if not _is_number(value):
            raise _AnswerProblem(f"sub-metric {name} score {value!r} is not a number")
        if not 0 <= value <= 100:
            raise _AnswerProblem(f"sub-metric {name} score {value!r} is outside 0..100")
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
        raise _AnswerProblem(f"criterion {name} must be an object with 'score' and/or 'passed'")
    score, said = value.get("score"), value.get("passed")
    if score is None and said is None:
        raise _AnswerProblem(f"criterion {name} has neither a score nor passed")
    if said is not None and not isinstance(said, bool):
        raise _AnswerProblem(f"criterion {name} 'passed' must be true or false")
    if score is None:
        return 1.0 if said else 0.0
    if not _is_number(score):
        raise _AnswerProblem(f"criterion {name} score {score!r} is not a number")
    if said is not None and said != (float(score) >= threshold):
        raise _AnswerProblem(f"criterion {name}: passed={str(said).lower()} contradicts score {score!r}")
    return float(score)


def _rubric(spec: JudgeSpec, data: Mapping[str, Any], explanation: str, flags: list[str]) -> JudgeResult:
    raw = data.get("criteria")
    if not isinstance(raw, dict):
        raise _AnswerProblem("'criteria' must be an object of criterion results")
    missing = [c.name for c in spec.criteria if c.name not in raw]
    if missing:
        raise _AnswerProblem(f"missing criterion result(s): {', '.join(missing)}")
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
