"""Demo data for the before/after screens: a second speakability version and a rerun of the first.

speakability@demo-v2 is demo-v1 with one change to its prompt: it flags glosses (a term followed by its
translation in parentheses). Apart from that it answers like demo-v1, with the same small run-to-run
noise. A second run of demo-v1 on the same turns (run index 1 of the imported sweep) is the noise
baseline. Everything lives in seed_demo's one imported sweep, next to demo-v1's verdicts.
Turns that moved get a review item (reason "version moved") and, where a demo reviewer speaks the
language, a review with failure categories; reviews that contradict demo-v2 wait for adjudication.
A stable 15% sample of the other turns is queued as the QA sample, weighted 1 / 0.15.

Idempotent like `demo_seed`: the same rows come out on every run.
"""

from __future__ import annotations

import hashlib
import json
import zlib
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.db.models import Q

from ..models import Category, Dataset, GoldLabel, JudgeVersion, Review, ReviewItem, Sweep, Verdict
from . import demo_content as content

JUDGE = "speakability"
BEFORE = "demo-v1"
AFTER = "demo-v2"
NOISE_PERCENT = 2
QA_RATE = 0.15
AFTER_SPEC = {"imported": True}
AFTER_SOURCE = (
    "seed_demo (imported verdicts): demo-v1's prompt plus one rule, flag a term followed by its "
    "translation in parentheses (a gloss)"
)
REVIEWERS = {"reviewer-fr": ("fr", "de"), "reviewer-asia": ("ja", "ko", "hi")}
GLOSS_WHY = "Glosses a term with its English translation in parentheses; a caller hears both."


@dataclass
class DemoVersionsSummary:
    moved: int
    noise: int
    reviews: int
    awaiting_adjudication: int
    qa_sample: int


def _stable(*parts: object) -> int:
    return zlib.crc32(":".join(str(p) for p in parts).encode())


def _reviewer_for(language: str, users: dict[str, object]):
    base = language.split("-")[0].lower()
    for username, languages in REVIEWERS.items():
        if base in languages and username in users:
            return users[username]
    return None


def _flipped(values: dict, *, why: str) -> dict:
    passed = not values["passed"]
    return {
        **values,
        "passed": passed,
        "flags": [] if passed else [content.WRONG_LANGUAGE],
        "explanation": "Reads naturally aloud." if passed else why,
    }


def _item_merge(
    *,
    judge,
    verdict: Verdict,
    dataset: Dataset,
    reason: str,
    priority: int,
    status: str | None = None,
    weight: float = 1.0,
) -> ReviewItem:
    """The turn's review item with `reason` added (other seeders may have queued the same turn for other reasons)."""
    item, created = ReviewItem.objects.get_or_create(
        judge=judge,
        turn_id=verdict.turn_id,
        defaults={
            "conversation_id": verdict.conversation_id,
            "dataset": dataset,
            "language": verdict.conversation.language,
            "reasons": [reason],
            "priority": priority,
            "sample_weight": weight,
            "status": status or ReviewItem.Status.OPEN,
            "reviews_required": 1,
        },
    )
    if not created:
        item.reasons = list(dict.fromkeys([*item.reasons, reason]))
        item.priority = max(item.priority, priority)
        if reason == ReviewItem.Reason.QA_SAMPLE:
            item.sample_weight = weight
        if status:
            item.status = status
        item.save(update_fields=["reasons", "priority", "sample_weight", "status", "updated_at"])
    return item


def demo_versions_seed(*, dataset: Dataset, sweep: Sweep) -> DemoVersionsSummary:
    """Create speakability@demo-v2, its verdicts, a rerun of demo-v1 and the review items on moved turns."""
    before = JudgeVersion.objects.select_related("judge").get(judge__slug=JUDGE, version=BEFORE)
    judge = before.judge
    canonical = json.dumps({"judge": JUDGE, "version": AFTER, "spec": AFTER_SPEC}, sort_keys=True)
    after, _ = JudgeVersion.objects.get_or_create(
        judge=judge,
        version=AFTER,
        defaults={
            "spec": AFTER_SPEC,
            "spec_hash": hashlib.sha256(canonical.encode()).hexdigest(),
            "source": AFTER_SOURCE,
        },
    )
    sweep.judge_versions.add(after)
    Verdict.objects.filter(sweep=sweep).filter(Q(judge_version=after) | Q(judge_version=before, run_index=1)).delete()

    first_run = list(
        Verdict.objects.filter(sweep=sweep, judge_version=before, run_index=0, turn__isnull=False)
        .select_related("conversation", "turn")
        .order_by("turn_id")
    )
    gold = {
        g.turn_id: g
        for g in GoldLabel.objects.filter(
            judge=judge, conversation__dataset=dataset, source=GoldLabel.Source.IMPORTED, turn__isnull=False
        )
    }
    rerun_rows, after_rows, moved, noise = [], [], [], 0
    for verdict in first_run:
        key = (verdict.conversation.external_id, verdict.turn.position)
        values = {
            "status": verdict.status,
            "rating": verdict.rating,
            "passed": verdict.passed,
            "flags": list(verdict.flags),
            "explanation": verdict.explanation,
            "raw_text": verdict.raw_text,
        }
        resolved = verdict.status == Verdict.Status.RESOLVED
        rerun = values
        if resolved and _stable(*key, "rerun") % 100 < NOISE_PERCENT:
            rerun, noise = _flipped(values, why="A brand or product name may be read as a foreign phrase."), noise + 1
        label = gold.get(verdict.turn_id)
        if label is not None and content.GLOSS in label.failure_modes:
            changed = {**values, "status": Verdict.Status.RESOLVED, "passed": False, "raw_text": ""}
            changed.update(flags=[content.GLOSS], explanation=GLOSS_WHY)
        elif resolved and _stable(*key, AFTER) % 100 < NOISE_PERCENT:
            changed = _flipped(values, why="A product name may be read as a foreign-language phrase.")
        else:
            changed = values
        common = {"conversation_id": verdict.conversation_id, "turn_id": verdict.turn_id, "tier": Verdict.Tier.IMPORTED}
        rerun_rows.append(Verdict(sweep=sweep, judge_version=before, run_index=1, **common, **rerun))
        after_rows.append(Verdict(sweep=sweep, judge_version=after, **common, **changed))
        if resolved and changed["status"] == Verdict.Status.RESOLVED and changed["passed"] != values["passed"]:
            moved.append((verdict, changed, label))
    Verdict.objects.bulk_create(rerun_rows)
    created = {v.turn_id: v for v in Verdict.objects.bulk_create(after_rows)}
    sweep.verdicts_written = Verdict.objects.filter(sweep=sweep).count()
    sweep.unresolved = Verdict.objects.filter(sweep=sweep, status=Verdict.Status.UNRESOLVED).count()
    sweep.save(update_fields=["verdicts_written", "unresolved"])

    from .demo import DEMO_USERS  # demo imports this module: a top-level import would be circular

    users = {u.username: u for u in get_user_model().objects.filter(username__in=[n for n, _, _ in DEMO_USERS])}
    for username in REVIEWERS:
        if username not in users:
            users[username], _ = get_user_model().objects.get_or_create(username=username)
    categories = {c.slug: c for c in Category.objects.all()}
    reviews = awaiting = 0
    moved_turns = set()
    for verdict, changed, label in moved:
        moved_turns.add(verdict.turn_id)
        reviewer = _reviewer_for(verdict.conversation.language, users)
        truth = label.passed if label is not None else None
        disputed = reviewer is not None and truth is not None and truth != changed["passed"]
        status = (
            ReviewItem.Status.OPEN
            if reviewer is None or truth is None
            else ReviewItem.Status.AWAITING_ADJUDICATION
            if disputed
            else ReviewItem.Status.CLOSED
        )
        item = _item_merge(
            judge=judge,
            verdict=verdict,
            dataset=dataset,
            reason=ReviewItem.Reason.VERSION_MOVED,
            priority=150,
            status=status,
        )
        if reviewer is None or truth is None:
            continue
        review, _ = Review.objects.update_or_create(
            item=item,
            reviewer=reviewer,
            defaults={
                "passed": truth,
                "verdict_agreement": {str(created[verdict.turn_id].pk): "disagree" if disputed else "agree"},
                "comment": "" if not disputed else "Reads fine aloud to me; the flagged word is a brand name.",
                "seconds_spent": 40 + _stable(verdict.conversation.external_id, verdict.turn.position) % 120,
            },
        )
        review.categories.set([categories[m] for m in label.failure_modes if m in categories])
        reviews += 1
        awaiting += disputed

    qa = 0
    for verdict in first_run:
        if (
            verdict.turn_id in moved_turns
            or _stable(verdict.conversation.external_id, verdict.turn.position, "qa") % 100 >= QA_RATE * 100
        ):
            continue
        _item_merge(
            judge=judge,
            verdict=verdict,
            dataset=dataset,
            reason=ReviewItem.Reason.QA_SAMPLE,
            priority=100,
            weight=1 / QA_RATE,
        )
        qa += 1
    return DemoVersionsSummary(
        moved=len(moved), noise=noise, reviews=reviews, awaiting_adjudication=awaiting, qa_sample=qa
    )
