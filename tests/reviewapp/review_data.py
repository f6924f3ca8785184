"""Builders for the review workflow's tests: review items on turns, with judges, verdicts and gold."""

from __future__ import annotations

import itertools

from reviewapp.models import (
    Category,
    Conversation,
    Dataset,
    Judge,
    JudgeVersion,
    ReviewItem,
    Sweep,
    Turn,
    Verdict,
)

from .corpus_data import fast_password_hasher  # noqa: F401

_counter = itertools.count()


def judge(slug: str = "conciseness", *, scale: str = Judge.Scale.ORDINAL, low: float = 1, high: float = 3) -> Judge:
    found, _ = Judge.objects.get_or_create(slug=slug, defaults={"scale": scale, "scale_min": low, "scale_max": high})
    return found


def version_of(found: Judge) -> JudgeVersion:
    version, _ = JudgeVersion.objects.get_or_create(
        judge=found, version="v1", defaults={"spec": {"slug": found.slug}, "spec_hash": f"hash-{found.slug}"}
    )
    return version


def dataset(name: str = "calls", **fields) -> Dataset:
    """A dataset, not blind unless asked (blind_review=True): most tests look at what judges said."""
    found, _ = Dataset.objects.get_or_create(name=name, defaults={"blind_review": False, **fields})
    return found


def category(slug: str = "verbosity", name: str = "Verbosity", **fields) -> Category:
    found, _ = Category.objects.get_or_create(slug=slug, defaults={"name": name, **fields})
    return found


def make_item(
    language: str = "fr",
    *,
    text: str = "Votre vol part à 9 h 40, porte 12, et je vous souhaite un excellent voyage.",
    judge_slug: str = "conciseness",
    verdict_rating: float | None = 2.0,
    verdict_passed: bool | None = None,
    verdict_status: str = Verdict.Status.RESOLVED,
    priority: int = 100,
    reasons: list[str] | None = None,
    reviews_required: int = 1,
    on: Dataset | None = None,
    intended_text: str = "",
) -> ReviewItem:
    """One conversation (caller turn, agent turn under review, caller turn) with one verdict and an item."""
    n = next(_counter)
    found = judge(judge_slug) if judge_slug == "conciseness" else Judge.objects.get(slug=judge_slug)
    data = on or dataset()
    conversation = Conversation.objects.create(dataset=data, external_id=f"conv-{n}", language=language)
    Turn.objects.bulk_create(
        [
            Turn(
                conversation=conversation,
                position=0,
                role="user",
                text="Bonjour, mon vol ?",
                audio_start_ms=0,
                audio_end_ms=1500,
            ),
            Turn(
                conversation=conversation,
                position=1,
                role="agent",
                text=text,
                intended_text=intended_text,
                audio_start_ms=1900,
                audio_end_ms=4200,
            ),
            Turn(
                conversation=conversation,
                position=2,
                role="user",
                text="Merci.",
                audio_start_ms=4600,
                audio_end_ms=5400,
            ),
        ]
    )
    turn = conversation.turns.get(position=1)
    sweep, _ = Sweep.objects.get_or_create(kind=Sweep.Kind.IMPORT, dataset=data, defaults={"status": Sweep.Status.DONE})
    Verdict.objects.create(
        sweep=sweep,
        judge_version=version_of(found),
        conversation=conversation,
        turn=turn,
        tier=Verdict.Tier.IMPORTED,
        status=verdict_status,
        rating=verdict_rating if verdict_status == Verdict.Status.RESOLVED else None,
        passed=verdict_passed,
        flags=["verbosity"],
        explanation="Un peu long pour l'oral.",
    )
    return ReviewItem.objects.create(
        judge=found,
        conversation=conversation,
        turn=turn,
        dataset=data,
        language=language,
        reasons=reasons or [ReviewItem.Reason.UNRESOLVED],
        priority=priority,
        reviews_required=reviews_required,
    )
