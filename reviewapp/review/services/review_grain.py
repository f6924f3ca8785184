"""A reviewer's labels at the judge's own grain, read from the review form and checked against the grain
the judge declares (selectors.verdict_shapes.Grain). Nothing guesses: a score outside its range, a
criterion that is neither met nor unmet, or a failure mode the judge does not have is an error that
names the field; an empty field is simply not labelled."""

from __future__ import annotations

from typing import Any

from reviewapp.review.selectors.verdict_shapes import Grain
from scoring.errors import TribunalError

SCORE_PREFIX = "grain_score__"
MET_PREFIX = "grain_met__"
MODES_FIELD = "grain_modes"


class GrainError(TribunalError, ValueError):
    """A grain label that does not fit the judge's grain."""


def grain_from_form(*, grain: Grain, data) -> dict[str, Any]:
    """The review's grain JSON from the POSTed form (`data` is a QueryDict or a plain mapping)."""
    if grain.empty:
        return {}
    scores: dict[str, float] = {}
    criteria: dict[str, bool] = {}
    for part in grain.fields:
        if part.kind == "score":
            raw = str(data.get(SCORE_PREFIX + part.name, "") or "").strip()
            if not raw:
                continue
            try:
                value = float(raw)
            except ValueError:
                raise GrainError(f"{part.name}: {raw!r} is not a number.") from None
            if (part.low is not None and value < part.low) or (part.high is not None and value > part.high):
                raise GrainError(f"{part.name}: {value:g} is outside {part.low:g}..{part.high:g}.")
            scores[part.name] = value
        else:
            raw = str(data.get(MET_PREFIX + part.name, "") or "").strip()
            if not raw:
                continue
            if raw not in ("met", "not_met"):
                raise GrainError(f"{part.name}: answer met or not met, not {raw!r}.")
            criteria[part.name] = raw == "met"
    modes = data.getlist(MODES_FIELD) if hasattr(data, "getlist") else list(data.get(MODES_FIELD) or [])
    unknown = [m for m in modes if m not in grain.failure_modes]
    if unknown:
        raise GrainError(f"{', '.join(unknown)}: not a failure mode of this judge.")
    result: dict[str, Any] = {}
    if scores:
        result["sub_scores"] = scores
    if criteria:
        result["criteria"] = criteria
    if modes:
        result["failure_modes"] = [m for m in grain.failure_modes if m in modes]
    if result:
        result["judge_version"] = grain.judge_version_id
    return result
