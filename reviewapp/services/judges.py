"""Judges and their immutable versions.

A JudgeVersion is a spec frozen by its hash. Storing the same spec again is a no-op; storing a
different text under an existing version label is refused, because verdicts, reviews and
agreement figures all point at that label and would silently change meaning.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.db.models import Q

from scoring.signatures import SignatureRule
from scoring.specs import JudgeSpec, spec_from_dict, spec_hash, spec_to_dict, validate_spec

from ..importers.limits import spec_columns_check
from ..models import Judge, JudgeVersion, Signature


class JudgeSpecConflict(ValueError):
    """A spec whose text changed while its version label did not."""

    def __init__(self, *, slug: str, version: str, stored_hash: str, new_hash: str):
        self.slug, self.version, self.stored_hash, self.new_hash = slug, version, stored_hash, new_hash
        super().__init__(
            f"judge {slug} version {version} is already stored with spec hash {stored_hash}, but this spec "
            f"hashes to {new_hash}: its text changed without a new version. Give it a new version label."
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
        clash = JudgeVersion.objects.filter(judge=judge, version=spec.version).first()
        if clash is not None:
            raise JudgeSpecConflict(slug=spec.slug, version=spec.version, stored_hash=clash.spec_hash, new_hash=digest)
        data = spec_to_dict(spec)
        data.pop("source", None)
        version = JudgeVersion.objects.create(
            judge=judge, version=spec.version, spec=data, spec_hash=digest, source=spec.source[:500]
        )
        return StoredVersion(version=version, created=True)


def judge_version_store(*, spec: JudgeSpec) -> JudgeVersion:
    """The stored JudgeVersion for ``spec`` (created if new). Raises JudgeSpecConflict."""
    return judge_version_ensure(spec=spec).version


def spec_of(judge_version: JudgeVersion) -> JudgeSpec:
    data = dict(judge_version.spec)
    data["source"] = judge_version.source
    return spec_from_dict(data)


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


def rules_for(judge: Judge, language: str) -> list[SignatureRule]:
    """Active, unsuspended tier-1 rules of ``judge`` that apply to ``language`` (its own and its base language's)."""
    base = language.split("-", 1)[0]
    signatures = (
        Signature.objects.filter(judge=judge, active=True, suspended_at__isnull=True)
        .filter(Q(language__iexact=language) | Q(language__iexact=base))
        .select_related("judge")
        .order_by("id")
    )
    return [signature_rule(s) for s in signatures]


class JudgeLookupError(ValueError):
    """A `slug` or `slug@version` that names no stored judge version."""


def judge_version_for(ref: str) -> JudgeVersion:
    """`slug@version`, or `slug` for its newest version."""
    slug, _, version = ref.partition("@")
    qs = JudgeVersion.objects.select_related("judge").filter(judge__slug=slug)
    if version:
        found = qs.filter(version=version).first()
        if found is None:
            known = ", ".join(qs.values_list("version", flat=True)) or "none"
            raise JudgeLookupError(f"Judge {slug!r} has no version {version!r} (known: {known}).")
        return found
    found = qs.order_by("-created_at", "-id").first()
    if found is None:
        raise JudgeLookupError(f"No judge {slug!r}: store its spec first.")
    return found
