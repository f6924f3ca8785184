"""Builders for corpus screens' tests: datasets, conversations, turns, gold labels and verdicts."""

import pytest

from reviewapp.models import Conversation, Dataset, GoldLabel, Judge, JudgeVersion, Sweep, Turn, Verdict


@pytest.fixture(autouse=True)
def fast_password_hasher(settings):
    """Users are created in almost every test; PBKDF2 would dominate the run time."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def make_dataset(name: str, languages: list[str], *, turns_per_conversation: int = 2) -> Dataset:
    dataset = Dataset.objects.create(name=name, description=f"{name} description", blind_review=False)
    for index, language in enumerate(languages):
        conversation = Conversation.objects.create(dataset=dataset, external_id=f"{name}-{index}", language=language)
        Turn.objects.bulk_create(
            Turn(conversation=conversation, position=p, role="user" if p % 2 == 0 else "agent", text=f"turn {p}")
            for p in range(turns_per_conversation)
        )
    return dataset


def judge_version(slug: str = "conciseness", level: str = Judge.Level.TURN) -> JudgeVersion:
    judge, _ = Judge.objects.get_or_create(slug=slug, defaults={"level": level})
    version, _ = JudgeVersion.objects.get_or_create(
        judge=judge, version="t1", defaults={"spec": {"slug": slug}, "spec_hash": f"hash-{slug}"}
    )
    return version


def import_sweep(dataset: Dataset) -> Sweep:
    return Sweep.objects.create(kind=Sweep.Kind.IMPORT, dataset=dataset, status=Sweep.Status.DONE)


def label_turn(turn: Turn, *, rating: float, verdict_rating: float | None, sweep: Sweep, **gold) -> None:
    version = judge_version()
    GoldLabel.objects.create(
        judge=version.judge,
        conversation=turn.conversation,
        turn=turn,
        source=GoldLabel.Source.IMPORTED,
        rating=rating,
        **gold,
    )
    if verdict_rating is not None:
        Verdict.objects.create(
            sweep=sweep,
            judge_version=version,
            conversation=turn.conversation,
            turn=turn,
            tier=Verdict.Tier.IMPORTED,
            status=Verdict.Status.RESOLVED,
            rating=verdict_rating,
            flags=["verbosity"],
            explanation="Too long by ear.",
        )
