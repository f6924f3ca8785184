"""Each judge's own shape, for the screens: what a verdict holds beyond its one outcome (sub-metrics of a
weighted judge with their weights and thresholds, rubric criteria, nested dimensions such as EVA's
faithfulness ones, the judge's failure modes apart from other flags), and the grain a reviewer can
label at (a score per sub-metric, met or not per criterion, the judge's own failure modes).

Plain reads of a JudgeVersion's stored spec (a dict) and a verdict's sub_scores and flags: no query,
so a page's query count does not change with the judges it shows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db.models import JSONField, OuterRef, Q, Subquery

from reviewapp.models import Judge, JudgeVersion


@dataclass(frozen=True)
class Part:
    """One sub-metric, criterion or dimension of a verdict."""

    name: str
    score: Any = None
    passed: bool | None = None
    note: str = ""
    detail: tuple[tuple[str, Any], ...] = ()
    declared: bool = True  # False: in the answer but not in the judge's spec


@dataclass(frozen=True)
class VerdictShape:
    parts: tuple[Part, ...] = ()
    failure_modes: tuple[str, ...] = ()
    other_flags: tuple[str, ...] = ()


@dataclass(frozen=True)
class GrainField:
    """A part a reviewer can label: `kind` is "score" (a number in low..high) or "met" (yes / no)."""

    name: str
    kind: str
    low: float | None = None
    high: float | None = None
    note: str = ""


@dataclass(frozen=True)
class Grain:
    """What the review form offers beyond the one rating: parts and the judge's own failure modes."""

    judge_version_id: int | None = None
    fields: tuple[GrainField, ...] = ()
    failure_modes: tuple[str, ...] = ()
    descriptions: Mapping[str, str] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return not self.fields and not self.failure_modes


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _weight(value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


def _spec_parts(spec: Mapping[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(name, meta) of each declared part: sub-metrics heaviest first (then by name), then criteria in
    the spec's order. Sub-metrics are an object in the stored spec, whose key order PostgreSQL's jsonb
    does not keep, so their order is the one rule that reads the same on every database."""
    parts: list[tuple[str, dict[str, Any]]] = []
    thresholds = spec.get("sub_metric_thresholds") or {}
    critical = set(spec.get("critical_sub_metrics") or ())
    sub_metrics = spec.get("sub_metrics") or {}
    weighted = sorted(sub_metrics.items(), key=lambda pair: (-_weight(pair[1]), str(pair[0])))
    for name, weight in weighted:
        parts.append((str(name), {"weight": weight, "threshold": thresholds.get(name), "critical": name in critical}))
    for criterion in spec.get("criteria") or ():
        if isinstance(criterion, Mapping) and "name" in criterion:
            parts.append(
                (
                    str(criterion["name"]),
                    {
                        "threshold": criterion.get("threshold"),
                        "required": bool(criterion.get("required")),
                        "description": criterion.get("description") or "",
                    },
                )
            )
    return parts


def _note(meta: Mapping[str, Any]) -> str:
    bits = []
    if meta.get("weight") is not None:
        bits.append(f"weight {float(meta['weight']):g}")
    if meta.get("threshold") is not None:
        bits.append(f"threshold {float(meta['threshold']):g}")
    if meta.get("critical"):
        bits.append("critical")
    if "required" in meta:
        bits.append("required" if meta["required"] else "optional")
    return ", ".join(bits)


def _nested(name: str, value: Mapping[str, Any], *, declared: bool) -> Part:
    score = next((value[k] for k in ("rating", "score") if k in value), None)
    passed = value.get("passed") if isinstance(value.get("passed"), bool) else None
    if passed is None and isinstance(value.get("flagged"), bool):
        passed = not value["flagged"]
    detail = tuple((str(k), v) for k, v in value.items() if k not in ("rating", "score", "passed"))
    return Part(name=name, score=score, passed=passed, detail=detail, declared=declared)


def verdict_shape(
    spec: Mapping[str, Any] | None, sub_scores: Mapping[str, Any] | None, flags: Sequence[Any]
) -> VerdictShape:
    """The parts of one verdict in its judge's order, then any part the answer had that the spec does not."""
    spec = spec or {}
    sub_scores = dict(sub_scores or {})
    parts: list[Part] = []
    for name, meta in _spec_parts(spec):
        if name not in sub_scores:
            continue
        value = sub_scores.pop(name)
        if isinstance(value, Mapping):
            parts.append(_nested(name, value, declared=True))
            continue
        score = _number(value)
        threshold = _number(meta.get("threshold"))
        passed = None if score is None or threshold is None else score >= threshold
        parts.append(Part(name=name, score=value, passed=passed, note=_note(meta)))
    for name, value in sub_scores.items():
        if isinstance(value, Mapping) and value and all(isinstance(v, Mapping) for v in value.values()):
            # A group of dimensions (EVA's faithfulness answers nest them): one part per dimension.
            parts.extend(_nested(f"{name}.{inner}", v, declared=False) for inner, v in value.items())
        elif isinstance(value, Mapping):
            parts.append(_nested(str(name), value, declared=False))
        else:
            parts.append(Part(name=str(name), score=value, declared=False))
    modes = set(spec.get("failure_modes") or ())
    texts = [str(f) for f in flags or ()]
    return VerdictShape(
        parts=tuple(parts),
        failure_modes=tuple(f for f in texts if f in modes),
        other_flags=tuple(f for f in texts if f not in modes),
    )


def grain_of(judge_version: JudgeVersion | None) -> Grain:
    """The grain of a judge version's spec; an imported placeholder (no spec) has none."""
    if judge_version is None or judge_version.spec.get("imported"):
        return Grain()
    spec = judge_version.spec
    fields: list[GrainField] = []
    descriptions: dict[str, str] = {}
    for name, meta in _spec_parts(spec):
        if "weight" in meta:
            fields.append(GrainField(name=name, kind="score", low=0, high=100, note=_note(meta)))
        else:
            fields.append(GrainField(name=name, kind="met", note=_note(meta)))
            if meta.get("description"):
                descriptions[name] = str(meta["description"])
    return Grain(
        judge_version_id=judge_version.pk,
        fields=tuple(fields),
        failure_modes=tuple(str(m) for m in spec.get("failure_modes") or ()),
        descriptions=descriptions,
    )


# A version that is not an imported placeholder (a missing key is NULL in SQL).
NOT_IMPORTED = Q(spec__imported__isnull=True) | ~Q(spec__imported=True)


def grain_annotations(judge_ref: str = "judge_id") -> dict[str, Subquery]:
    """`review_grain`'s version read inside another query, for the judge at `judge_ref` of its rows: the
    newest version that is not an imported placeholder, as `grain_version_id` and `grain_version_spec`
    (read back with `annotated_grain`)."""
    newest = JudgeVersion.objects.filter(NOT_IMPORTED, judge=OuterRef(judge_ref)).order_by("-created_at", "-pk")
    return {
        "grain_version_id": Subquery(newest.values("pk")[:1]),
        "grain_version_spec": Subquery(newest.values("spec")[:1], output_field=JSONField()),
    }


def annotated_grain(row) -> Grain:
    """The grain of a row read with `grain_annotations`."""
    if row.grain_version_id is None:
        return Grain()
    return grain_of(JudgeVersion(pk=row.grain_version_id, spec=row.grain_version_spec))


def review_grain(*, judge: Judge) -> Grain:
    """The grain reviewers label at for `judge`: that of its newest version with a spec (one query, the
    same read the review screen makes inside its item query through `grain_annotations`).

    Taken from the judge, never from the verdicts, so a blind review's form shows nothing a judge said.
    """
    return annotated_grain(Judge.objects.annotate(**grain_annotations("pk")).get(pk=judge.pk))
