"""Reviewer statistics: agreement with gold and with each other."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from reviewapp.models import GoldLabel, Judge, Review
from reviewapp.quality.selectors.gold import winners
from reviewapp.quality.selectors.quality_slice import TargetKey, language_q, outcome, target_key

# --- reviewers ---------------------------------------------------------------------------------------


@dataclass
class ReviewerStats:
    reviewer_id: int
    username: str
    reviews: int = 0
    with_gold: int = 0
    agree_gold: int = 0
    peer_pairs: int = 0
    peer_agree: int = 0
    seconds: int = 0
    timed: int = 0
    languages: Counter = field(default_factory=Counter)
    categories: Counter = field(default_factory=Counter)

    @property
    def gold_agreement(self) -> float | None:
        return self.agree_gold / self.with_gold if self.with_gold else None

    @property
    def peer_agreement(self) -> float | None:
        return self.peer_agree / self.peer_pairs if self.peer_pairs else None

    @property
    def items_per_hour(self) -> float | None:
        return self.timed * 3600 / self.seconds if self.seconds else None

    @property
    def language_counts(self) -> list[tuple[str, int]]:
        return sorted(self.languages.items())

    @property
    def top_categories(self) -> list[tuple[str, int]]:
        return self.categories.most_common()


def reviewer_stats(*, reviewer_ids: list[int] | None = None, language: str = "") -> list[ReviewerStats]:
    """Each reviewer's agreement with gold (adjudicated or imported: never gold their own votes made) and
    with peers on the same items, their pace, and the categories they use: four queries."""
    judges = {j.pk: j for j in Judge.objects.all()}
    rows = list(
        Review.objects.filter(language_q(language, "item__language"))
        .order_by("reviewer__username", "pk")
        .values(
            "id",
            "reviewer_id",
            "reviewer__username",
            "item_id",
            "item__judge_id",
            "item__conversation_id",
            "item__turn_id",
            "item__language",
            "rating",
            "passed",
            "label",
            "seconds_spent",
        )
    )
    categories: dict[int, list[str]] = defaultdict(list)
    for review_id, slug in Review.categories.through.objects.filter(
        language_q(language, "review__item__language")
    ).values_list("review_id", "category__slug"):
        categories[review_id].append(slug)
    # Unanimous gold is left out: it is the reviewers' own votes, so agreeing with it proves nothing.
    grouped: dict[tuple[int, TargetKey], list[GoldLabel]] = defaultdict(list)
    for g in GoldLabel.objects.filter(
        language_q(language, "conversation__language"),
        excluded=False,
        source__in=[GoldLabel.Source.ADJUDICATED, GoldLabel.Source.IMPORTED],
        conversation_id__in={r["item__conversation_id"] for r in rows},
    ).only("id", "judge_id", "conversation_id", "turn_id", "source", "rating", "passed", "label", "excluded"):
        grouped[(g.judge_id, (g.conversation_id, g.turn_id))].append(g)
    gold: dict[tuple[int, TargetKey], str] = {}
    for key, best in winners(grouped).items():
        value = outcome(judges[key[0]], rating=best.rating, passed=best.passed, label=best.label)
        if value is not None:
            gold[key] = value

    by_item: dict[int, list[tuple[int, str | None]]] = defaultdict(list)
    for r in rows:
        r["outcome"] = outcome(judges[r["item__judge_id"]], rating=r["rating"], passed=r["passed"], label=r["label"])
        by_item[r["item_id"]].append((r["reviewer_id"], r["outcome"]))

    stats: dict[int, ReviewerStats] = {}
    for r in rows:
        if reviewer_ids is not None and r["reviewer_id"] not in reviewer_ids:
            continue
        s = stats.setdefault(r["reviewer_id"], ReviewerStats(r["reviewer_id"], r["reviewer__username"]))
        s.reviews += 1
        s.languages[r["item__language"]] += 1
        s.categories.update(categories.get(r["id"], []))
        if r["seconds_spent"]:
            s.seconds += r["seconds_spent"]
            s.timed += 1
        truth = gold.get((r["item__judge_id"], target_key(r, "item__")))
        if truth is not None and r["outcome"] is not None:
            s.with_gold += 1
            s.agree_gold += truth == r["outcome"]
        for other, value in by_item[r["item_id"]]:
            if other != r["reviewer_id"] and value is not None and r["outcome"] is not None:
                s.peer_pairs += 1
                s.peer_agree += value == r["outcome"]
    return sorted(stats.values(), key=lambda s: s.username)
