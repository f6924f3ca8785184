"""Reads for the tier-1 pages: a signature's history, and the signature versions a sweep used."""

from __future__ import annotations

from django.db.models import Count, Q, QuerySet

from reviewapp.models import Signature, SignatureVersion, Sweep, Verdict


def signature_history(*, signature: Signature) -> QuerySet[SignatureVersion]:
    """Every version, newest first, with who made it: one query."""
    return signature.versions.select_related("changed_by").order_by("-version")


def sweep_signature_versions(*, sweep: Sweep) -> list[SignatureVersion]:
    """The signature versions a sweep recorded at its start, each with `resolved`: the turns it settled.

    Two queries, whatever the number of signatures.
    """
    versions = list(
        SignatureVersion.objects.filter(sweeps=sweep)
        .select_related("signature", "signature__judge")
        .order_by("signature__judge__slug", "signature__language", "signature_id")
    )
    counts = dict(
        Verdict.objects.filter(sweep=sweep, tier=Verdict.Tier.SIGNATURE, run_index=0)
        .values("signature_id")
        .annotate(n=Count("id"))
        .values_list("signature_id", "n")
    )
    for version in versions:
        version.resolved = counts.get(version.signature_id, 0)
    return versions


def signatures_listed(*, judge_slug: str = "", language: str = "") -> QuerySet[Signature]:
    signatures = (
        Signature.objects.select_related("judge")
        .annotate(evidence_count=Count("evidence", distinct=True))
        .order_by("judge__slug", "language", "-active", "id")
    )
    if judge_slug:
        signatures = signatures.filter(judge__slug=judge_slug)
    if language:
        signatures = signatures.filter(language__iexact=language)
    return signatures


def suspended_count() -> int:
    return Signature.objects.filter(Q(active=True) & Q(suspended_at__isnull=False)).count()
