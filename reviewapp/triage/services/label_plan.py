"""The label planner's allocation as a term of the review queue's priority.

Each open or in-review item of the judge gets `plan_term` points (0..PLAN_TERM_MAX) in proportion to
its language cell's share of the budget; the previous term is taken off first, so re-applying never
stacks. The term stays below the gap between triage's reason tiers (services/triage.py), so it orders
items within a tier: of two equally urgent items, the one where evidence is thinnest comes first.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import F

from reviewapp.models import JudgeVersion, ReviewItem
from reviewapp.triage.selectors.planner import DEFAULT_BUDGET, Plan, plan_cells

PLAN_TERM_MAX = 49
ACTIVE = (ReviewItem.Status.OPEN, ReviewItem.Status.IN_REVIEW)


def plan_terms(plan: Plan) -> dict[str, int]:
    top = max((c.allocated for c in plan.cells), default=0)
    return {c.language: (round(PLAN_TERM_MAX * c.allocated / top) if top else 0) for c in plan.cells}


@transaction.atomic
def label_plan_apply(*, version: JudgeVersion, budget: int = DEFAULT_BUDGET) -> dict[str, int]:
    """Set the planner's priority term on the judge's active items; returns the term per language."""
    if budget <= 0:
        raise ValueError("A review budget is at least one label.")
    terms = plan_terms(plan_cells(version=version, budget=budget))
    items = ReviewItem.objects.filter(judge=version.judge, status__in=ACTIVE)
    items.exclude(language__in=list(terms)).exclude(plan_term=0).update(
        priority=F("priority") - F("plan_term"), plan_term=0
    )
    for language, term in terms.items():
        items.filter(language=language).update(priority=F("priority") - F("plan_term") + term, plan_term=term)
    return terms
