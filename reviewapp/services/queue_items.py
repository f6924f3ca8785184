"""Review items from imported data: where an imported judge verdict and an imported gold label
disagree, where a verdict is unresolved or failed, and a stable QA sample of the rest.

Items are merged with triage's `review_items_merge` (one item per judge and target, reasons as a
set), so running this again, or after a sweep's triage, never duplicates an item. Judge-vs-gold
disagreements carry the `gold_disagrees` reason. QA-sample items need two reviews (triage's rule), so
the sample also measures how often reviewers agree with each other.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass, field

from django.db import transaction

from scoring.hedges import hedge_in
from scoring.parsing import UNCERTAIN_CODES

from ..models import Dataset, GoldLabel, ReviewItem, Verdict
from .triage import review_items_merge

Reason = ReviewItem.Reason
DEFAULT_QA_RATE = 0.1


@dataclass
class ImportedItems:
    items_created: int = 0
    items_updated: int = 0
    reasons: dict[str, int] = field(default_factory=dict)


def _sampled(dataset_id: int, key: str, rate: float) -> bool:
    """A stable draw per target, seeded by the dataset: running again picks the same sample."""
    if rate <= 0:
        return False
    if rate >= 1:
        return True
    digest = hashlib.sha256(f"imports-qa:{dataset_id}:{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64 < rate


def _differs(gold: dict, verdict: dict) -> bool:
    if gold["passed"] is not None and verdict["passed"] is not None:
        return gold["passed"] != verdict["passed"]
    if gold["rating"] is not None and verdict["rating"] is not None:
        return gold["rating"] != verdict["rating"]
    if gold["label"] and verdict["label"]:
        return gold["label"] != verdict["label"]
    return False


@transaction.atomic
def items_from_imports(*, dataset: Dataset, qa_rate: float = DEFAULT_QA_RATE) -> ImportedItems:
    """Queue the dataset's imported verdicts that need people (see the module docstring)."""
    gold: dict[tuple[int, int, int | None], dict] = {}
    for row in GoldLabel.objects.filter(
        conversation__dataset=dataset, excluded=False, source=GoldLabel.Source.IMPORTED
    ).values("judge_id", "conversation_id", "turn_id", "rating", "passed", "label"):
        gold[(row["judge_id"], row["conversation_id"], row["turn_id"])] = row

    reasons: dict[tuple[int, tuple[int, int | None]], set[str]] = defaultdict(set)
    qa_weight: dict[tuple[int, tuple[int, int | None]], float] = {}
    verdicts = (
        Verdict.objects.filter(conversation__dataset=dataset)
        .values(
            "judge_version__judge_id",
            "conversation_id",
            "turn_id",
            "status",
            "rating",
            "passed",
            "label",
            "explanation",
            "raw_text",
            "problem_code",
        )
        .order_by("pk")
    )
    for row in verdicts.iterator(chunk_size=2000):
        judge_id = row["judge_version__judge_id"]
        key = (judge_id, (row["conversation_id"], row["turn_id"]))
        if row["status"] != Verdict.Status.RESOLVED:
            reasons[key].add(Reason.UNRESOLVED)
            # The parser's code when there is one; an imported answer is read for hedges the same way.
            if row["problem_code"] in UNCERTAIN_CODES or hedge_in(f"{row['explanation']}\n{row['raw_text']}"):
                reasons[key].add(Reason.UNCERTAIN)
            continue
        label = gold.get((judge_id, row["conversation_id"], row["turn_id"]))
        if label is not None and _differs(label, row):
            reasons[key].add(Reason.GOLD_DISAGREES)
        elif _sampled(dataset.pk, f"{judge_id}:{row['conversation_id']}:{row['turn_id']}", qa_rate):
            reasons[key].add(Reason.QA_SAMPLE)
            qa_weight[key] = 1.0 / qa_rate

    created, updated = review_items_merge(reasons=reasons, qa_weight=qa_weight)
    summary = ImportedItems(items_created=created, items_updated=updated)
    for reason_set in reasons.values():
        for reason in reason_set:
            summary.reasons[str(reason)] = summary.reasons.get(str(reason), 0) + 1

    return summary
