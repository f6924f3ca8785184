"""Builders for the disputes, quality and comparison tests: a binary judge, turns, verdicts, gold, items."""

from __future__ import annotations

from reviewapp.models import (
    Category,
    Conversation,
    Dataset,
    GoldLabel,
    Judge,
    JudgeVersion,
    Review,
    ReviewItem,
    Sweep,
    Turn,
    Verdict,
)


def binary_judge(slug: str = "speakability") -> Judge:
    judge, _ = Judge.objects.get_or_create(
        slug=slug, defaults={"scale": Judge.Scale.BINARY, "scale_min": 0, "scale_max": 1}
    )
    return judge


def version(judge: Judge, label: str) -> JudgeVersion:
    jv, _ = JudgeVersion.objects.get_or_create(
        judge=judge, version=label, defaults={"spec": {}, "spec_hash": f"hash-{judge.slug}-{label}"}
    )
    return jv


def agent_turns(name: str, count: int, *, language: str = "fr") -> list[Turn]:
    dataset, _ = Dataset.objects.get_or_create(name=name)
    conversation = Conversation.objects.create(
        dataset=dataset, external_id=f"{name}-{Conversation.objects.count()}", language=language
    )
    return list(
        Turn.objects.bulk_create(
            Turn(conversation=conversation, position=p, role="agent", text=f"{name} turn {p} ({language})")
            for p in range(count)
        )
    )


def sweep_for(turns: list[Turn], name: str = "") -> Sweep:
    return Sweep.objects.create(
        kind=Sweep.Kind.IMPORT, dataset=turns[0].conversation.dataset, status=Sweep.Status.DONE, name=name
    )


def verdicts(sweep: Sweep, jv: JudgeVersion, turns: list[Turn], passed: list[bool | None], *, run_index: int = 0):
    return Verdict.objects.bulk_create(
        Verdict(
            sweep=sweep,
            judge_version=jv,
            conversation=t.conversation,
            turn=t,
            run_index=run_index,
            tier=Verdict.Tier.IMPORTED,
            status=Verdict.Status.RESOLVED if p is not None else Verdict.Status.UNRESOLVED,
            passed=p,
            flags=["gloss"] if p is False else [],
            explanation="Glossed." if p is False else "Fine.",
        )
        for t, p in zip(turns, passed, strict=True)
    )


def gold(judge: Judge, turns: list[Turn], passed: list[bool], *, source: str = GoldLabel.Source.IMPORTED, modes=()):
    return GoldLabel.objects.bulk_create(
        GoldLabel(
            judge=judge,
            conversation=t.conversation,
            turn=t,
            source=source,
            passed=p,
            failure_modes=list(modes) if not p else [],
        )
        for t, p in zip(turns, passed, strict=True)
    )


def item(judge: Judge, turn: Turn, *, status=ReviewItem.Status.AWAITING_ADJUDICATION, reasons=None, weight=1.0):
    return ReviewItem.objects.create(
        judge=judge,
        conversation=turn.conversation,
        turn=turn,
        dataset=turn.conversation.dataset,
        language=turn.conversation.language,
        reasons=reasons or [ReviewItem.Reason.JUDGES_DISAGREE],
        status=status,
        sample_weight=weight,
    )


def review(review_item: ReviewItem, reviewer, *, passed: bool, categories: list[Category] = (), seconds: int = 60):
    r = Review.objects.create(item=review_item, reviewer=reviewer, passed=passed, seconds_spent=seconds)
    r.categories.set(categories)
    return r


def category(slug: str = "gloss") -> Category:
    c, _ = Category.objects.get_or_create(slug=slug, defaults={"name": slug.title()})
    return c
