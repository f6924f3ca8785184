"""A rubric generator's JSON stored as a rubric judge, with its edge cases (scoring/rubric_import.py)."""

from __future__ import annotations

from typing import Any

from django.db import transaction

from reviewapp.judging.services.judges import StoredVersion, judge_version_ensure
from reviewapp.models import EdgeCase
from scoring.rubric_import import RubricImport


@transaction.atomic
def rubric_judge_store(*, imported: RubricImport) -> StoredVersion:
    """Store the rubric's judge version (unchanged when already stored) and its edge cases by position."""
    stored = judge_version_ensure(spec=imported.spec)
    judge = stored.version.judge
    for case in imported.edge_cases:
        EdgeCase.objects.update_or_create(
            judge=judge,
            position=case.position,
            defaults={"case": case.case, "criteria": list(case.criteria), "coverage": case.coverage},
        )
    return stored


def variance_check_params(judge_versions) -> dict[str, Any]:
    """Sweep params from the rubric judges' variance checks: the strictest disagreement threshold (triage
    queues a criterion's targets for human labels above it) and the check's repeats and sample."""
    checks = [jv.spec.get("params", {}).get("variance_check") for jv in judge_versions]
    checks = [c for c in checks if isinstance(c, dict)]
    if not checks:
        return {}
    return {
        "variance_threshold": min(float(c["disagreement_threshold"]) for c in checks),
        "variance_check": {
            "repeats": max(int(c["repeats"]) for c in checks),
            "sample_rate": max(float(c["sample_rate"]) for c in checks),
        },
    }
