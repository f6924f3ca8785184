"""Which gold a judge version must never be measured on: the targets its draft used as examples or quoted."""

from __future__ import annotations

from reviewapp.models import JudgeVersion, VersionProvenance

TargetKey = tuple[int, int | None]  # (conversation id, turn id or None), as in selectors/quality.py


def excluded_targets(version: JudgeVersion | int) -> set[TargetKey]:
    """The targets `version` was drafted from (one query; empty for a version with no provenance).
    Every figure of that version, and any comparison with it, leaves them out of its gold."""
    version_id = version if isinstance(version, int) else version.pk
    row = VersionProvenance.objects.filter(version_id=version_id).values_list("excluded", flat=True).first()
    return {(int(c), None if t is None else int(t)) for c, t in (row or ())}


def without_excluded(gold: dict, excluded: set[TargetKey]) -> dict:
    """Gold without the excluded targets, and without labels that give the judge no outcome (refused)."""
    return {
        target: label
        for target, label in gold.items()
        if target not in excluded and getattr(label, "outcome", None) is not None
    }


def excluded_of(version: JudgeVersion) -> set[TargetKey]:
    """`excluded_targets` from the version's own provenance row: no query when the version was read with
    select_related("provenance") (selectors.quality.judge_versions does)."""
    try:
        provenance = version.provenance
    except VersionProvenance.DoesNotExist:
        return set()
    return {(int(c), None if t is None else int(t)) for c, t in (provenance.excluded or ())}


def held_out(gold: dict, excluded: set[TargetKey]) -> dict:
    """Gold without the excluded targets (every other label kept as it is, refused ones included)."""
    return {target: label for target, label in gold.items() if target not in excluded} if excluded else gold
