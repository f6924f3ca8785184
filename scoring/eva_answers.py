"""EVA judges' answers read the way EVA reads them: per-turn arrays, {"turns": [...]} objects and one-object ratings, each turn's rating or why it was not rated."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scoring.eva import TURNS_OBJECT, EvaProfile
from scoring.parsing import (
    RESOLVED,
    UNRESOLVED,
    JudgeResult,
    ProblemCode,
    _AnswerProblem,
    extract_json_object,
    extract_json_value,
    unresolved,
)

# --- answers ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TurnAnswer:
    turn_id: int
    result: JudgeResult
    not_rated: bool = False


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _entries(profile: EvaProfile, raw_text: str) -> list[Any]:
    data = extract_json_value(raw_text)
    if isinstance(data, dict):
        turns = data.get("turns")
        if isinstance(turns, list) and (profile.shape == TURNS_OBJECT or "turn_id" not in data):
            return turns
        if "turn_id" in data:
            return [data]  # EVA reads a lone entry as a one-turn answer
        raise _AnswerProblem('expected a JSON array of turn entries (or {"turns": [...]}), got an object')
    if isinstance(data, list):
        return data
    raise _AnswerProblem(f"expected a JSON array of turn entries, got a JSON {type(data).__name__}")


def _explanation(entry: Mapping[str, Any], key: str = "explanation") -> str:
    value = entry.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _AnswerProblem(f"'{key}' must be a string")
    return value.strip()


def _rated(profile: EvaProfile, rating: float, **answer: Any) -> JudgeResult:
    """A resolved answer at `rating` (with the answer's flags, sub_scores and explanation): on a binary scale
    1 passes and 0 fails; an ordinal point is its own label."""
    binary = profile.scale == "binary"
    passed = rating == 1.0 if binary else None
    label = ("pass" if passed else "fail") if binary else f"{rating:g}"
    return JudgeResult(status=RESOLVED, rating=rating, label=label, passed=passed, **answer)


def _turn_result(profile: EvaProfile, turn_id: int, entry: Mapping[str, Any]) -> TurnAnswer:
    where = f"turn {turn_id}"
    try:
        if profile.entity_scored:
            return _entity_result(profile, turn_id, entry)
        explanation = _explanation(entry)
        if "rating" not in entry:
            return TurnAnswer(
                turn_id, unresolved(f"{where}: the entry has no rating", explanation=explanation, code="missing_key")
            )
        value = entry["rating"]
        if value is None:
            return TurnAnswer(
                turn_id,
                JudgeResult(
                    status=UNRESOLVED,
                    problem=f"{where}: not rated (rating is null)",
                    explanation=explanation,
                    problem_code=ProblemCode.UNCERTAIN,
                ),
                not_rated=True,
            )
        if not _is_number(value) or not float(value).is_integer():
            return TurnAnswer(
                turn_id,
                unresolved(
                    f"{where}: rating {value!r} is not a whole scale point",
                    explanation=explanation,
                    code="out_of_range" if _is_number(value) else "bad_type",
                ),
            )
        rating = float(value)
        if not profile.scale_min <= rating <= profile.scale_max:
            return TurnAnswer(
                turn_id,
                unresolved(
                    f"{where}: rating {value!r} is outside the scale {profile.scale_min}..{profile.scale_max}",
                    explanation=explanation,
                    code="out_of_range",
                ),
            )
        flags: list[str] = []
        if profile.failure_mode_field:
            modes = entry.get(profile.failure_mode_field)
            if modes is None:
                modes = []
            if not isinstance(modes, list) or not all(isinstance(m, str) for m in modes):
                raise _AnswerProblem(f"'{profile.failure_mode_field}' must be a list of strings")
            known = set(profile.failure_modes)
            for mode in (m.strip() for m in modes if m.strip()):
                flags.append(mode if mode in known else f"unknown_failure_mode:{mode}")
            if rating == profile.scale_max and flags:
                flags.append("failure_modes_on_top_rating")
        return TurnAnswer(turn_id, _rated(profile, rating, flags=tuple(flags), sub_scores={}, explanation=explanation))
    except _AnswerProblem as exc:
        return TurnAnswer(turn_id, unresolved(f"{where}: {exc}", code=exc.code))


def _entity_result(profile: EvaProfile, turn_id: int, entry: Mapping[str, Any]) -> TurnAnswer:
    where = f"turn {turn_id}"
    summary = _explanation(entry, "summary")
    entities = entry.get("entities")
    if entities is None:
        entities = []
    if not isinstance(entities, list):
        raise _AnswerProblem("'entities' must be a list")
    counted = 0
    correct = 0
    failures: list[str] = []
    for index, entity in enumerate(entities):
        if not isinstance(entity, dict):
            raise _AnswerProblem(f"entities[{index}] must be an object")
        skipped = entity.get("skipped", False)
        if not isinstance(skipped, bool):
            raise _AnswerProblem(f"entities[{index}].skipped must be true or false")
        if skipped:
            continue
        ok = entity.get("correct")
        if not isinstance(ok, bool):
            raise _AnswerProblem(f"entities[{index}].correct must be true or false")
        counted += 1
        correct += ok
        if not ok:
            mode = f"entity_error:{entity.get('type') or 'unknown'}"
            if mode not in failures:
                failures.append(mode)
    if counted == 0:
        # EVA scores such a turn -1, "not applicable", and leaves it out of every figure.
        return TurnAnswer(
            turn_id,
            JudgeResult(status=UNRESOLVED, problem=f"{where}: not rated (no entity to check)", explanation=summary),
            not_rated=True,
        )
    rating = 1.0 if correct == counted else 0.0
    sub_scores = {"entity_accuracy": correct / counted}
    return TurnAnswer(
        turn_id, _rated(profile, rating, flags=tuple(failures), sub_scores=sub_scores, explanation=summary)
    )


def parse_per_turn(
    profile: EvaProfile, raw_text: str, *, turn_ids: Sequence[int], rated: Iterable[int]
) -> dict[int, TurnAnswer]:
    """One TurnAnswer for every turn id in ``rated``; never a guess.

    ``turn_ids`` are every turn id the conversation has, ``rated`` those with content the judge must
    rate (the targets). The whole answer is unresolved when it is not a JSON array of objects with
    integer turn ids, or when it rates a turn the conversation does not have (its numbering cannot
    be trusted); a target with no entry, or with two, is unresolved on its own.
    """
    rated = list(dict.fromkeys(rated))
    known = set(turn_ids)
    try:
        entries = _entries(profile, raw_text)
        by_id: dict[int, list[Mapping[str, Any]]] = {}
        for index, entry in enumerate(entries):
            if not isinstance(entry, dict):
                raise _AnswerProblem(f"entry {index} is not an object")
            turn_id = entry.get("turn_id")
            if not isinstance(turn_id, int) or isinstance(turn_id, bool):
                raise _AnswerProblem(f"entry {index} has no integer turn_id (got {turn_id!r})")
            if turn_id not in known:
                raise _AnswerProblem(
                    f"entry {index} rates turn {turn_id}, which the conversation does not have"
                    f" (turns {', '.join(str(t) for t in sorted(known)) or 'none'})"
                )
            by_id.setdefault(turn_id, []).append(entry)
    except _AnswerProblem as exc:
        return {turn_id: TurnAnswer(turn_id, unresolved(str(exc), code=exc.code)) for turn_id in rated}
    answers: dict[int, TurnAnswer] = {}
    for turn_id in rated:
        found = by_id.get(turn_id, [])
        if not found:
            answers[turn_id] = TurnAnswer(
                turn_id, unresolved(f"turn {turn_id}: the answer has no entry for it", code="missing_key")
            )
        elif len(found) > 1:
            answers[turn_id] = TurnAnswer(
                turn_id, unresolved(f"turn {turn_id}: the answer has {len(found)} entries for it", code="duplicate_key")
            )
        else:
            answers[turn_id] = _turn_result(profile, turn_id, found[0])
    return answers


def parse_conversation(profile: EvaProfile, raw_text: str) -> JudgeResult:
    """A conversation judge's object: rating on the profile's scale, dimensions as flags and sub-scores."""
    explanation = ""
    try:
        data = extract_json_object(raw_text)
        explanation = _explanation(data)
        if "rating" not in data:
            raise _AnswerProblem("missing required key(s): rating")
        value = data["rating"]
        if value is None:
            raise _AnswerProblem("the judge gave no rating (rating is null)", "uncertain")
        if not _is_number(value) or not float(value).is_integer():
            raise _AnswerProblem(f"rating {value!r} is not a whole point of the {profile.scale} scale", "out_of_range")
        rating = float(value)
        if not profile.scale_min <= rating <= profile.scale_max:
            raise _AnswerProblem(
                f"rating {value!r} is outside the scale {profile.scale_min}..{profile.scale_max}", "out_of_range"
            )
        flags: list[str] = []
        sub_scores: dict[str, float] = {}
        details: list[str] = []
        if profile.dimension_field:
            dims = data.get(profile.dimension_field)
            if not isinstance(dims, dict):
                raise _AnswerProblem(f"'{profile.dimension_field}' must be an object of dimensions")
            missing = [name for name in profile.dimensions if name not in dims]
            if missing:
                raise _AnswerProblem(f"missing dimension(s): {', '.join(missing)}")
            for name in profile.dimensions:
                dim = dims[name]
                if not isinstance(dim, dict):
                    raise _AnswerProblem(f"dimension {name} must be an object")
                flagged = dim.get(profile.flag_field)
                if not isinstance(flagged, bool):
                    raise _AnswerProblem(f"dimension {name}: '{profile.flag_field}' must be true or false")
                if flagged:
                    flags.append(name)
                if "rating" in dim:
                    sub = dim["rating"]
                    if not _is_number(sub) or not profile.scale_min <= sub <= profile.scale_max:
                        raise _AnswerProblem(f"dimension {name}: rating {sub!r} is outside the scale")
                    sub_scores[name] = float(sub)
                said = dim.get("evidence", dim.get("analysis"))
                if isinstance(said, str) and said.strip() and flagged:
                    details.append(f"{name}: {said.strip()}")
            flags.extend(f"unknown_dimension:{name}" for name in dims if name not in profile.dimensions)
        if not explanation and details:
            explanation = "\n".join(details)
        return _rated(profile, rating, flags=tuple(flags), sub_scores=sub_scores, explanation=explanation)
    except _AnswerProblem as exc:
        return unresolved(str(exc), explanation=explanation, code=exc.code)


def describe(result: JudgeResult, *, not_rated: bool = False) -> str:
    """A short cell for a side-by-side: the rating and flags, or why there is none."""
    if not_rated:
        return "not rated"
    if result.status != RESOLVED:
        return f"unresolved ({result.problem})"
    flags = f" [{', '.join(result.flags)}]" if result.flags else ""
    return f"{result.rating:g}{flags}"


def per_turn_side_by_side(
    profile: EvaProfile, old_text: str, new_text: str, *, turn_ids: Sequence[int], rated: Sequence[int]
) -> list[tuple[int, str, str]]:
    """(turn id, archived, replay) for every rated turn of a per-turn call answered twice."""
    old = parse_per_turn(profile, old_text, turn_ids=turn_ids, rated=rated)
    new = parse_per_turn(profile, new_text, turn_ids=turn_ids, rated=rated)
    return [
        (
            turn_id,
            describe(old[turn_id].result, not_rated=old[turn_id].not_rated),
            describe(new[turn_id].result, not_rated=new[turn_id].not_rated),
        )
        for turn_id in dict.fromkeys(rated)
    ]
