"""A judge with adjudicated and unanimous disagreements in two languages, and an LLM stand-in that reads
the drafted guidance: the corpus of the draft, leakage and proof tests (Django and browser)."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass

from reviewapp.models import (
    Adjudication,
    Category,
    Comment,
    Conversation,
    Dataset,
    GoldLabel,
    JudgeVersion,
    Review,
    ReviewItem,
    Sweep,
    Turn,
    Verdict,
)
from scoring.llm import LLMReply

from .test_sweep_support import store_judge

GLOSS = "(gloss)"


class CorrectionAwareLLM:
    """Answers speakability prompts: rating 0 when the turn text carries a gloss marker AND the prompt
    holds a drafted corrections block (the new version), else 1. The old version never sees the gloss."""

    def __init__(self):
        self.calls = 0
        self._lock = threading.Lock()

    def complete(self, *, model, system, user, params=None) -> LLMReply:
        with self._lock:
            self.calls += 1
        turn_part = user.split("## Defects", 1)[0]
        rating = 0 if ("## Reviewer corrections" in user and GLOSS in turn_part) else 1
        answer = {"rating": rating, "failure_modes": ["gloss"] if rating == 0 else [], "explanation": f"rated {rating}"}
        return LLMReply(json.dumps(answer), 10, 5, 5, 1, "")


@dataclass
class Corpus:
    v1: JudgeVersion
    fr_items: list[ReviewItem]
    ja_items: list[ReviewItem]
    comment: Comment
    held_out: list[Turn]


def _turns(dataset: Dataset, language: str, texts: list[str]) -> list[Turn]:
    conversation = Conversation.objects.create(
        dataset=dataset, external_id=f"{language}-{Conversation.objects.count()}", language=language
    )
    turns = []
    for i, text in enumerate(texts):
        Turn.objects.create(conversation=conversation, position=2 * i, role=Turn.Role.USER, text="Bonjour ?")
        turns.append(
            Turn.objects.create(conversation=conversation, position=2 * i + 1, role=Turn.Role.AGENT, text=text)
        )
    return turns


def _item(judge, turn, status):
    return ReviewItem.objects.create(
        judge=judge,
        conversation=turn.conversation,
        turn=turn,
        dataset=turn.conversation.dataset,
        language=turn.conversation.language,
        reasons=[ReviewItem.Reason.QA_SAMPLE],
        status=status,
        reviews_required=2,
    )


def build(lead, reviewers) -> Corpus:
    """fr: 3 adjudicated disagreements (gloss); ja: 2 unanimous ones (wrong-language-phrase) and a comment.
    Held out: 8 fr and 8 ja turns with imported gold, half of them glosses the old version passes."""
    v1 = store_judge("speakability")
    judge = v1.judge
    gloss = Category.objects.create(slug="gloss", name="Gloss")
    wrong = Category.objects.create(slug="wrong-language-phrase", name="Wrong-language phrase")
    dataset = Dataset.objects.create(name="calls", reviews_required=2)
    fr = _turns(dataset, "fr", [f"Votre courriel {GLOSS} numéro {i} est confirmé." for i in range(3)])
    ja = _turns(dataset, "ja", [f"キャンセル{GLOSS} 番号{i}です。" for i in range(2)])
    held_fr = _turns(
        dataset, "fr", [f"Le vol {GLOSS} {i} part à neuf heures." if i % 2 else f"Le vol {i} part." for i in range(8)]
    )
    held_ja = _turns(dataset, "ja", [f"予約{GLOSS} {i}です。" if i % 2 else f"予約{i}です。" for i in range(8)])
    imported = Sweep.objects.create(kind=Sweep.Kind.IMPORT, dataset=dataset, status=Sweep.Status.DONE)
    every = fr + ja + held_fr + held_ja
    Verdict.objects.bulk_create(
        Verdict(
            sweep=imported,
            judge_version=v1,
            conversation=t.conversation,
            turn=t,
            tier=Verdict.Tier.IMPORTED,
            status=Verdict.Status.RESOLVED,
            rating=1,
            passed=True,
            explanation="Reads fine.",
        )
        for t in every
    )
    fr_items = []
    for i, turn in enumerate(fr):
        item = _item(judge, turn, ReviewItem.Status.CLOSED)
        for n, reviewer in enumerate(reviewers):
            review = Review.objects.create(
                item=item,
                reviewer=reviewer,
                passed=n == 0,
                comment="" if n == 0 else f"Le mot anglais entre parenthèses est lu deux fois ({i}).",
            )
            if n:
                review.categories.set([gloss])
        adjudication = Adjudication.objects.create(
            item=item, lead=lead, passed=False, rationale="A gloss: the listener hears the word twice."
        )
        adjudication.categories.set([gloss])
        GoldLabel.objects.create(
            judge=judge,
            conversation=turn.conversation,
            turn=turn,
            source="adjudicated",
            passed=False,
            failure_modes=["gloss"],
        )
        fr_items.append(item)
    ja_items = []
    for i, turn in enumerate(ja):
        item = _item(judge, turn, ReviewItem.Status.CLOSED)
        for reviewer in reviewers:
            review = Review.objects.create(
                item=item, reviewer=reviewer, passed=False, comment=f"英語の言い換えです ({i})"
            )
            review.categories.set([wrong])
        # Closing an item whose reviews agree stores its unanimous gold label.
        GoldLabel.objects.create(
            judge=judge, conversation=turn.conversation, turn=turn, source="unanimous", passed=False
        )
        ja_items.append(item)
    comment = Comment.objects.create(turn=ja[0], author=reviewers[0], body="カタカナの後に英語が続きます。")
    comment.categories.set([wrong])
    GoldLabel.objects.bulk_create(
        GoldLabel(
            judge=judge,
            conversation=t.conversation,
            turn=t,
            source="imported",
            passed=GLOSS not in t.text,
        )
        for t in held_fr + held_ja
    )
    return Corpus(v1=v1, fr_items=fr_items, ja_items=ja_items, comment=comment, held_out=held_fr + held_ja)


def build_more(lead, reviewers, corpus: Corpus) -> None:
    """Two more adjudicated fr disagreements, with reviews, comments and categories."""
    judge = corpus.v1.judge
    gloss = Category.objects.get(slug="gloss")
    dataset = corpus.fr_items[0].dataset
    for turn in _turns(dataset, "fr", [f"Le billet {GLOSS} {i}." for i in range(2)]):
        Verdict.objects.create(
            sweep=Sweep.objects.filter(kind=Sweep.Kind.IMPORT).first(),
            judge_version=corpus.v1,
            conversation=turn.conversation,
            turn=turn,
            tier=Verdict.Tier.IMPORTED,
            status=Verdict.Status.RESOLVED,
            rating=1,
            passed=True,
        )
        item = _item(judge, turn, ReviewItem.Status.CLOSED)
        for reviewer in reviewers:
            review = Review.objects.create(item=item, reviewer=reviewer, passed=False, comment="Glose.")
            review.categories.set([gloss])
        Adjudication.objects.create(item=item, lead=lead, passed=False, rationale="Gloss.").categories.set([gloss])
        GoldLabel.objects.create(
            judge=judge, conversation=turn.conversation, turn=turn, source="adjudicated", passed=False
        )
        Comment.objects.create(turn=turn, author=reviewers[1], body="Encore une glose.").categories.set([gloss])
