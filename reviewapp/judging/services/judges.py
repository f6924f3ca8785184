"""Judges and their immutable versions.

A JudgeVersion is a spec frozen by its hash. Storing the same spec again is a no-op; storing a
different text under an existing version label is refused, because verdicts, reviews and
agreement figures all point at that label and would silently change meaning.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Q

from reviewapp.corpus.importers.limits import spec_columns_check
from reviewapp.models import Judge, JudgeVersion, Signature
from scoring import eva
from scoring.errors import TribunalError
from scoring.signatures import SignatureRule
from scoring.specs import JudgeSpec, spec_from_dict, spec_hash, spec_to_dict, validate_spec


class JudgeSpecConflict(TribunalError, ValueError):
    """A spec whose text changed while its version label did not."""

    def __init__(self, *, slug: str, version: str, stored_hash: str, new_hash: str):
        self.slug, self.version, self.stored_hash, self.new_hash = slug, version, stored_hash, new_hash
        super().__init__(
            f"judge {slug} version {version} is already stored with spec hash {stored_hash}, but this spec "
            f"hashes to {new_hash}: its text changed without a new version. Give it a new version label."
        )


class JudgeLevelConflict(TribunalError, ValueError):
    """A spec at another grain (turn or conversation) or on another scale than the judge it would join."""

    def __init__(self, *, judge: Judge, spec: JudgeSpec):
        super().__init__(
            f"judge {judge.slug} is stored {judge.level}-level on the {judge.scale} scale, but {spec.key} "
            f"({spec.source or 'this spec'}) is {spec.level}-level on the {spec.scale} scale: one judge's verdicts and "
            "gold share one grain and one scale. Leave it out (load_judges --only) or store it under another slug."
        )


@dataclass(frozen=True)
class StoredVersion:
    version: JudgeVersion
    created: bool


def judge_version_ensure(*, spec: JudgeSpec) -> StoredVersion:
    """Store ``spec`` unless it is already stored; say which happened."""
    validate_spec(spec)
    spec_columns_check(spec)
    digest = spec_hash(spec)
    with transaction.atomic():
        existing = JudgeVersion.objects.select_related("judge").filter(spec_hash=digest).first()
        if existing is not None:
            return StoredVersion(version=existing, created=False)
        judge, _ = Judge.objects.get_or_create(
            slug=spec.slug,
            defaults={
                "name": spec.name,
                "level": spec.level,
                "scale": spec.scale,
                "scale_min": spec.scale_min,
                "scale_max": spec.scale_max,
                "description": spec.description,
            },
        )
        if judge.level != spec.level or judge.scale != spec.scale:
            raise JudgeLevelConflict(judge=judge, spec=spec)
        _fill_missing_bounds(judge, spec)
        clash = JudgeVersion.objects.filter(judge=judge, version=spec.version).first()
        if clash is not None:
            raise JudgeSpecConflict(slug=spec.slug, version=spec.version, stored_hash=clash.spec_hash, new_hash=digest)
        data = spec_to_dict(spec)
        data.pop("source", None)
        version = JudgeVersion.objects.create(
            judge=judge, version=spec.version, spec=data, spec_hash=digest, source=spec.source[:500]
        )
        return StoredVersion(version=version, created=True)


def _fill_missing_bounds(judge: Judge, spec: JudgeSpec) -> None:
    """A judge stored without scale bounds (by an import) takes them from a spec on the same scale."""
    if judge.scale != spec.scale or spec.scale_min is None or spec.scale_max is None:
        return
    if judge.scale_min is None and judge.scale_max is None:
        judge.scale_min, judge.scale_max = spec.scale_min, spec.scale_max
        judge.save(update_fields=["scale_min", "scale_max"])


def judge_version_store(*, spec: JudgeSpec) -> JudgeVersion:
    """The stored JudgeVersion for ``spec`` (created if new). Raises JudgeSpecConflict."""
    return judge_version_ensure(spec=spec).version


def judge_version_spec(judge_version: JudgeVersion) -> JudgeSpec:
    data = dict(judge_version.spec)
    data["source"] = judge_version.source
    return spec_from_dict(data)


class JudgeNotRunnable(TribunalError, ValueError):
    """A judge version that cannot be swept: an imported placeholder, or no known scale."""


def is_placeholder(judge_version: JudgeVersion) -> bool:
    """Versions an import created to hold imported verdicts: they have no prompt to send."""
    return bool((judge_version.spec or {}).get("imported")) or "user_template" not in (judge_version.spec or {})


def runnable_spec(judge_version: JudgeVersion) -> JudgeSpec:
    """The spec a sweep sends, its scale bounds completed; JudgeNotRunnable when it has none.

    A spec with no bounds takes them from its Judge, then from its EVA profile. An ordinal judge
    with no known bounds cannot run: its answers could not be told in or out of range.
    """
    if is_placeholder(judge_version):
        raise JudgeNotRunnable(
            f"{judge_version} is an imported placeholder (it holds imported verdicts, not a prompt): load its spec"
        )
    spec = judge_version_spec(judge_version)
    profile = eva.profile_for(spec.eva_profile) if spec.eva_profile else None
    if profile is not None and profile.audio and not getattr(spec, "needs_audio", False):
        # EVA's audio judges rate what they hear: sent as text only, their answers would be guesses.
        raise JudgeNotRunnable(f"{judge_version}: EVA's {profile.key} listens to the audio, and this spec sends none")
    if spec.scale_min is not None and spec.scale_max is not None:
        return spec
    judge = judge_version.judge
    low, high = spec.scale_min, spec.scale_max
    if judge.scale == spec.scale:
        low = judge.scale_min if low is None else low
        high = judge.scale_max if high is None else high
    if profile is not None and profile.scale == spec.scale:
        low = float(profile.scale_min) if low is None else low
        high = float(profile.scale_max) if high is None else high
    if spec.scale == "binary":
        low, high = (0.0 if low is None else low), (1.0 if high is None else high)
    if spec.scale in ("binary", "ordinal") and (low is None or high is None):
        raise JudgeNotRunnable(
            f"{judge_version}: no scale: add one (scale min and max in the judge's spec, or on judge {judge.slug})"
        )
    return dataclasses.replace(spec, scale_min=low, scale_max=high)


def signature_rule(signature: Signature) -> SignatureRule:
    return SignatureRule(
        id=signature.pk,
        judge=signature.judge.slug,
        language=signature.language,
        criterion=signature.criterion,
        intent=signature.intent,
        kind=signature.kind,
        pattern=signature.pattern,
        negation_guards=tuple(str(g) for g in signature.negation_guards or ()),
        label=signature.label,
        rating=signature.rating,
        passed=signature.passed,
    )


def signature_rules(judge: Judge, language: str) -> list[SignatureRule]:
    """Active, unsuspended tier-1 rules of ``judge`` that apply to ``language`` (its own and its base language's)."""
    base = language.split("-", 1)[0]
    signatures = (
        Signature.objects.filter(judge=judge, active=True, suspended_at__isnull=True)
        .filter(Q(language__iexact=language) | Q(language__iexact=base))
        .select_related("judge")
        .order_by("id")
    )
    return [signature_rule(s) for s in signatures]


class JudgeLookupError(TribunalError, ValueError):
    """A `slug` or `slug@version` that names no stored judge version."""


def judge_version_for(ref: str, *, runnable: bool = True) -> JudgeVersion:
    """`slug@version`, or `slug` for its newest version that can run (never an imported placeholder).

    With `runnable=False` (commands that measure a version rather than run it: an imported judge's
    verdicts are measured like any other's), `slug` alone is simply its newest version.
    """
    slug, _, version = ref.partition("@")
    qs = JudgeVersion.objects.select_related("judge").filter(judge__slug=slug)
    if version:
        found = qs.filter(version=version).first()
        if found is None:
            known = ", ".join(qs.values_list("version", flat=True)) or "none"
            raise JudgeLookupError(f"Judge {slug!r} has no version {version!r} (known: {known}).")
        return found
    stored = list(qs.order_by("-created_at", "-id"))
    if not stored:
        raise JudgeLookupError(f"No judge {slug!r}: store its spec first.")
    if not runnable:
        return stored[0]
    problems = []
    for candidate in stored:
        try:
            runnable_spec(candidate)
        except JudgeNotRunnable as exc:
            problems.append(str(exc))
            continue
        return candidate
    raise JudgeLookupError(f"Judge {slug!r} has no version that can run: " + "; ".join(problems))
