"""A small labelled corpus for the export tests: two languages, every gold source, reviews, comments, verdicts."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from reviewapp.models import (
    Adjudication,
    Category,
    Comment,
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


@dataclass
class Corpus:
    judge: Judge
    dataset: Dataset
    fr: Conversation
    ja: Conversation
    v1: JudgeVersion
    v2: JudgeVersion
    reviewers: list


def turn_pair(conversation: Conversation, position: int, agent_text: str) -> Turn:
    Turn.objects.create(conversation=conversation, position=position, role=Turn.Role.USER, text=f"Question {position}")
    return Turn.objects.create(conversation=conversation, position=position + 1, role=Turn.Role.AGENT, text=agent_text)


def build_corpus(make_user, *, extra_conversations: int = 0) -> Corpus:
    judge = Judge.objects.create(slug="conciseness", level=Judge.Level.TURN, scale=Judge.Scale.ORDINAL)
    v1 = JudgeVersion.objects.create(judge=judge, version="1.0", spec_hash="a" * 64)
    v2 = JudgeVersion.objects.create(judge=judge, version="2.0", spec_hash="b" * 64)
    dataset = Dataset.objects.create(name="calls")
    fr = Conversation.objects.create(dataset=dataset, external_id="fr-1", language="fr-CA")
    ja = Conversation.objects.create(dataset=dataset, external_id="ja-1", language="ja")
    gloss = Category.objects.create(slug="gloss", name="Gloss")
    formula = Category.objects.create(slug="politeness-formula", name="Politeness formula")
    ana = make_user("ana-reviewer", languages=["fr"])
    bea = make_user("bea-reviewer", languages=["fr"])
    lea = make_user("lea-export", role="lead")

    # fr turn 1: imported gold 3 and an adjudicated 1 -> adjudicated wins; two reviews and a comment.
    t1 = turn_pair(fr, 0, "Bonjour, je vérifie votre dossier.")
    GoldLabel.objects.create(judge=judge, conversation=fr, turn=t1, source="imported", rating=3)
    GoldLabel.objects.create(
        judge=judge, conversation=fr, turn=t1, source="adjudicated", rating=1, failure_modes=["gloss"]
    )
    item = ReviewItem.objects.create(judge=judge, conversation=fr, turn=t1, dataset=dataset, language="fr-CA")
    for reviewer, rating in ((ana, 1), (bea, 2)):
        review = Review.objects.create(item=item, reviewer=reviewer, rating=rating, comment=f"Rated {rating}.")
        review.categories.set([gloss])
    adjudication = Adjudication.objects.create(item=item, lead=lea, rating=1, rationale="The gloss is a failure.")
    adjudication.categories.set([gloss])
    comment = Comment.objects.create(turn=t1, author=ana, judge=judge, body="Gloss after the code.")
    comment.categories.set([gloss, formula])
    sweep = Sweep.objects.create(dataset=dataset, status=Sweep.Status.DONE)
    for version, rating in ((v1, 3), (v2, 1)):
        Verdict.objects.create(
            sweep=sweep, judge_version=version, conversation=fr, turn=t1, tier="llm", status="resolved", rating=rating
        )
    # fr turn 2: unanimous gold 2.
    t2 = turn_pair(fr, 2, "Merci, bonne journée.")
    GoldLabel.objects.create(judge=judge, conversation=fr, turn=t2, source="unanimous", rating=2)
    # fr turn 3: only an excluded label -> left out.
    t3 = turn_pair(fr, 4, "Au revoir.")
    GoldLabel.objects.create(judge=judge, conversation=fr, turn=t3, source="imported", rating=3, excluded=True)
    # ja turn: imported gold 3.
    t4 = turn_pair(ja, 0, "かしこまりました。")
    GoldLabel.objects.create(judge=judge, conversation=ja, turn=t4, source="imported", rating=3)

    corpus = Corpus(judge=judge, dataset=dataset, fr=fr, ja=ja, v1=v1, v2=v2, reviewers=[ana, bea, lea])
    add_labelled(corpus, extra_conversations)
    return corpus


def add_labelled(corpus: Corpus, count: int, *, language: str = "en") -> None:
    """`count` more conversations, each with one agent turn labelled 2 (imported) and a verdict."""
    sweep = Sweep.objects.filter(dataset=corpus.dataset).first()
    start = Conversation.objects.filter(dataset=corpus.dataset).count()
    for number in range(start, start + count):
        conversation = Conversation.objects.create(
            dataset=corpus.dataset, external_id=f"{language}-{number}", language=language
        )
        turn = turn_pair(conversation, 0, f"Answer {number}")
        GoldLabel.objects.create(judge=corpus.judge, conversation=conversation, turn=turn, source="imported", rating=2)
        Verdict.objects.create(
            sweep=sweep, judge_version=corpus.v2, conversation=conversation, turn=turn, tier="llm", status="resolved"
        )


@pytest.fixture
def corpus(make_user):
    return build_corpus(make_user)


@pytest.fixture
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT
