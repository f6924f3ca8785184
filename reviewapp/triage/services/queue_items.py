"""Review items from a dataset's verdicts (imports first of all): what needs people, and a QA sample.

For each judge with verdicts in the dataset, an item per target that needs people:

* `gold_disagrees`: a resolved verdict whose outcome differs from the target's winning gold
  (`selectors.gold`, compared through the judge's outcome rule; a pair on another field is not a
  disagreement, it is refused);
* `unresolved` (and `uncertain` when the answer hedged): an answer of any run that could not be used;
* `qa_sample`: a random sample of EVERY target the judge scored in the dataset, drawn independently of
  any agreement, stratified by language (`triage.qa_pick`), each item storing its weight
  1 / inclusion probability. A target can be sampled and disagree at once: both reasons are kept.

Items are merged with triage's `review_items_merge` (one item per judge and target, reasons as a
set), so running this again, or after a sweep's triage, never duplicates an item; the draw is seeded
by the dataset and judge, so it picks the same sample again. QA-sample items need two reviews.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction

from reviewapp.models import Dataset, Judge, ReviewItem, Verdict
from reviewapp.quality.selectors import outcomes
from reviewapp.quality.selectors.gold import winning_gold
from reviewapp.triage.services.triage import qa_pick, review_items_merge
from scoring.errors import TribunalError
from scoring.hedges import hedge_in
from scoring.parsing import UNCERTAIN_CODES

Reason = ReviewItem.Reason
DEFAULT_QA_RATE = 0.1
TargetKey = tuple[int, int | None]


class TriageError(TribunalError, ValueError):
    """A dataset triage that cannot run (a rate outside 0..1, a judge with no verdict in the dataset)."""


@dataclass
class ImportedItems:
    items_created: int = 0
    items_updated: int = 0
    reasons: dict[str, int] = field(default_factory=dict)
    # judge slug -> language -> {"targets": N, "sampled": n, "probability": n / N}
    qa_sample: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "items_created": self.items_created,
            "items_updated": self.items_updated,
            "reasons": dict(sorted(self.reasons.items())),
            "qa_sample": self.qa_sample,
        }


@transaction.atomic
def dataset_triage(*, dataset: Dataset, qa_rate: float = DEFAULT_QA_RATE, judge: Judge | None = None) -> ImportedItems:
    """Queue the dataset's verdicts that need people (see the module docstring); `judge` limits it to one.
    The dataset page, `manage.py triage`, imports and the demo all come here."""
    if not 0 <= qa_rate <= 1:
        raise TriageError(f"The QA rate is a share between 0 and 1, not {qa_rate}.")
    # Only answers: a verdict of another status says the judge did not rate the target at all.
    verdicts = Verdict.objects.filter(
        conversation__dataset=dataset,
        status__in=[Verdict.Status.RESOLVED, Verdict.Status.UNRESOLVED, Verdict.Status.ERROR],
    )
    if judge is not None:
        verdicts = verdicts.filter(judge_version__judge=judge)
    rows_by_judge: dict[int, dict[TargetKey, list[dict]]] = defaultdict(lambda: defaultdict(list))
    language: dict[TargetKey, str] = {}
    for row in (
        verdicts.values(
            "judge_version__judge_id",
            "conversation_id",
            "turn_id",
            "conversation__language",
            "status",
            "rating",
            "passed",
            "label",
            "explanation",
            "raw_text",
            "problem_code",
        )
        .order_by("pk")
        .iterator(chunk_size=2000)
    ):
        target = (row["conversation_id"], row["turn_id"])
        rows_by_judge[row["judge_version__judge_id"]][target].append(row)
        language[target] = row["conversation__language"]
    if judge is not None and not rows_by_judge:
        raise TriageError(f"{judge.slug} has no verdict in dataset {dataset.name}.")

    judges = {j.pk: j for j in Judge.objects.filter(pk__in=list(rows_by_judge))}
    reasons: dict[tuple[int, TargetKey], set[str]] = defaultdict(set)
    qa_weight: dict[tuple[int, TargetKey], float] = {}
    summary = ImportedItems()
    for judge_id, targets in rows_by_judge.items():
        this = judges[judge_id]
        gold = winning_gold(judge=this, dataset_ids=[dataset.pk])
        for target, rows in targets.items():
            key = (judge_id, target)
            label = gold.get(target)
            truth = (
                outcomes.outcome_for(this, rating=label.rating, passed=label.passed, label=label.label).value
                if label is not None
                else None
            )
            for row in rows:
                if row["status"] != Verdict.Status.RESOLVED:
                    reasons[key].add(Reason.UNRESOLVED)
                    # The parser's code when there is one; an imported answer is read for hedges the same way.
                    if row["problem_code"] in UNCERTAIN_CODES or hedge_in(f"{row['explanation']}\n{row['raw_text']}"):
                        reasons[key].add(Reason.UNCERTAIN)
                    continue
                judged = outcomes.outcome_for(this, rating=row["rating"], passed=row["passed"], label=row["label"])
                if truth is not None and judged.value is not None and judged.value != truth:
                    reasons[key].add(Reason.GOLD_DISAGREES)
        keys = sorted(targets, key=lambda t: (t[0], t[1] if t[1] is not None else -1))
        picked = qa_pick(
            keys=keys, languages=[language[t] for t in keys], rate=qa_rate, seed=f"imports-qa:{dataset.pk}:{judge_id}"
        )
        per_language: dict[str, dict[str, Any]] = defaultdict(lambda: {"targets": 0, "sampled": 0})
        for target in keys:
            per_language[language[target]]["targets"] += 1
        for target, weight in picked.items():
            reasons[(judge_id, target)].add(Reason.QA_SAMPLE)
            qa_weight[(judge_id, target)] = weight
            per_language[language[target]]["sampled"] += 1
        for stats in per_language.values():
            stats["probability"] = round(stats["sampled"] / stats["targets"], 6) if stats["targets"] else 0.0
        summary.qa_sample[this.slug] = dict(sorted(per_language.items()))

    summary.items_created, summary.items_updated = review_items_merge(reasons=reasons, qa_weight=qa_weight)
    for reason_set in reasons.values():
        for reason in reason_set:
            summary.reasons[str(reason)] = summary.reasons.get(str(reason), 0) + 1
    return summary
