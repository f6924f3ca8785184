"""Which versions of a judge a quality or comparison page is about, from the address's parameters."""

from __future__ import annotations

from django.http import Http404

from reviewapp.models import JudgeVersion


def pick_version(versions: list[JudgeVersion], value: str) -> JudgeVersion | None:
    """The version named by id or label; the latest when none is named; Http404 for an unknown one."""
    if not value:
        return versions[-1] if versions else None
    for version in versions:
        if str(version.pk) == value or version.version == value:
            return version
    raise Http404("No such version of this judge.")


def compare_pair(
    versions: list[JudgeVersion], *, a_value: str, b_value: str
) -> tuple[JudgeVersion | None, JudgeVersion | None]:
    """B as named (else the latest); A as named, else the newest other version made no later than B."""
    b = pick_version(versions, b_value)
    if a_value:
        return pick_version(versions, a_value), b
    earlier = [v for v in versions if b is not None and v.pk != b.pk and v.created_at <= b.created_at]
    return (earlier[-1] if earlier else None), b
