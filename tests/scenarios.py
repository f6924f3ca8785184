"""Two labelled corpora built on tests/factories.py, shared by several suites.

- export_corpus: two languages, every gold source, reviews, an adjudication, a comment and verdicts
  of two versions (the export, retention and API tests).
- draft_corpus: a judge with adjudicated and unanimous disagreements in two languages and held-out
  gold, read by the draft, leakage and proof tests (Django, browser and worker).
"""

from __future__ import annotations

from dataclasses import dataclass

from reviewapp.models import (
    Comment,
    Conversation,
    Dataset,
    Judge,
    JudgeVersion,
    ReviewItem,
    Sweep,
    Turn,
    Verdict,
)
from tests.factories import (
    AdjudicationFactory,
    CategoryFactory,
    CommentFactory,
    ConversationFactory,
    DatasetFactory,
    GoldLabelFactory,
    JudgeFactory,
    JudgeVersionFactory,
    ReviewFactory,
    ReviewItemFactory,
    SweepFactory,
    VerdictFactory,
    category,
    gold,
    store_judge,
    turn_pairs,
)
from tests.fake_llms import GLOSS


@dataclass
class ExportCorpus:
    judge: Judge
    dataset: Dataset
    fr: Conversation
    ja: Conversation
    v1: JudgeVersion
    v2: JudgeVersion
    reviewers: list


def turn_pair(conversation: Conversation, position: int, agent_text: str) -> Turn:
    """A user turn "Question <position>" and the agent turn after it (returned)."""
    return turn_pairs(conversation, [agent_text], question="Question {position}", start=position)[0]


def export_corpus(make_user, *, extra_conversations: int = 0) -> ExportCorpus:
    judge = JudgeFactory(slug="conciseness")
    v1 = JudgeVersionFactory(judge=judge, version="1.0", spec={}, spec_hash="a" * 64)
    v2 = JudgeVersionFactory(judge=judge, version="2.0", spec={}, spec_hash="b" * 64)
    dataset = DatasetFactory(name="calls")
    fr = ConversationFactory(dataset=dataset, external_id="fr-1", language="fr-CA")
    ja = ConversationFactory(dataset=dataset, external_id="ja-1", language="ja")
    gloss = CategoryFactory(slug="gloss", name="Gloss")
    formula = CategoryFactory(slug="politeness-formula", name="Politeness formula")
    ana = make_user("ana-reviewer", languages=["fr"])
    bea = make_user("bea-reviewer", languages=["fr"])
    lea = make_user("lea-export", role="lead")

    # fr turn 1: imported gold 3 and an adjudicated 1 -> adjudicated wins; two reviews and a comment.
    t1 = turn_pair(fr, 0, "Bonjour, je vérifie votre dossier.")
    GoldLabelFactory(judge=judge, turn=t1, source="imported", rating=3)
    GoldLabelFactory(judge=judge, turn=t1, source="adjudicated", rating=1, failure_modes=["gloss"])
    item = ReviewItemFactory(judge=judge, turn=t1)
    for reviewer, rating in ((ana, 1), (bea, 2)):
        ReviewFactory(item=item, reviewer=reviewer, rating=rating, comment=f"Rated {rating}.", categories=[gloss])
    AdjudicationFactory(item=item, lead=lea, rating=1, rationale="The gloss is a failure.", categories=[gloss])
    CommentFactory(turn=t1, author=ana, judge=judge, body="Gloss after the code.", categories=[gloss, formula])
    sweep = SweepFactory(kind=Sweep.Kind.SWEEP, dataset=dataset)
    for jv, rating in ((v1, 3), (v2, 1)):
        VerdictFactory(sweep=sweep, judge_version=jv, turn=t1, tier="llm", rating=rating)
    # fr turn 2: unanimous gold 2.
    GoldLabelFactory(judge=judge, turn=turn_pair(fr, 2, "Merci, bonne journée."), source="unanimous", rating=2)
    # fr turn 3: only an excluded label -> left out.
    GoldLabelFactory(judge=judge, turn=turn_pair(fr, 4, "Au revoir."), source="imported", rating=3, excluded=True)
    # ja turn: imported gold 3.
    GoldLabelFactory(judge=judge, turn=turn_pair(ja, 0, "かしこまりました。"), source="imported", rating=3)

    corpus = ExportCorpus(judge=judge, dataset=dataset, fr=fr, ja=ja, v1=v1, v2=v2, reviewers=[ana, bea, lea])
    add_labelled(corpus, extra_conversations)
    return corpus


def add_labelled(corpus: ExportCorpus, count: int, *, language: str = "en") -> None:
    """`count` more conversations, each with one agent turn labelled 2 (imported) and a verdict of v2."""
    sweep = Sweep.objects.filter(dataset=corpus.dataset).first()
    start = Conversation.objects.filter(dataset=corpus.dataset).count()
    for number in range(start, start + count):
        conversation = ConversationFactory(
            dataset=corpus.dataset, external_id=f"{language}-{number}", language=language
        )
        turn = turn_pair(conversation, 0, f"Answer {number}")
        GoldLabelFactory(judge=corpus.judge, turn=turn, source="imported", rating=2)
        VerdictFactory(sweep=sweep, judge_version=corpus.v2, turn=turn, tier="llm")


@dataclass
class DraftCorpus:
    v1: JudgeVersion
    fr_items: list[ReviewItem]
    ja_items: list[ReviewItem]
    comment: Comment
    held_out: list[Turn]


def _call(dataset: Dataset, language: str, texts: list[str]) -> list[Turn]:
    conversation = ConversationFactory(
        dataset=dataset, external_id=f"{language}-{Conversation.objects.count()}", language=language
    )
    return turn_pairs(conversation, texts, question="Bonjour ?")


def _closed_item(judge: Judge, turn: Turn) -> ReviewItem:
    return ReviewItemFactory(
        judge=judge,
        turn=turn,
        reasons=[ReviewItem.Reason.QA_SAMPLE],
        status=ReviewItem.Status.CLOSED,
        reviews_required=2,
    )


def draft_corpus(lead, reviewers) -> DraftCorpus:
    """fr: 3 adjudicated disagreements (gloss); ja: 2 unanimous ones (wrong-language-phrase) and a comment.
    Held out: 8 fr and 8 ja turns with imported gold, half of them glosses the old version passes."""
    v1 = store_judge("speakability")
    judge = v1.judge
    gloss = CategoryFactory(slug="gloss", name="Gloss")
    wrong = CategoryFactory(slug="wrong-language-phrase", name="Wrong-language phrase")
    dataset = DatasetFactory(name="calls", reviews_required=2)
    fr = _call(dataset, "fr", [f"Votre courriel {GLOSS} numéro {i} est confirmé." for i in range(3)])
    ja = _call(dataset, "ja", [f"キャンセル{GLOSS} 番号{i}です。" for i in range(2)])
    held_fr = _call(
        dataset, "fr", [f"Le vol {GLOSS} {i} part à neuf heures." if i % 2 else f"Le vol {i} part." for i in range(8)]
    )
    held_ja = _call(dataset, "ja", [f"予約{GLOSS} {i}です。" if i % 2 else f"予約{i}です。" for i in range(8)])
    imported = SweepFactory(dataset=dataset)
    Verdict.objects.bulk_create(
        VerdictFactory.build(
            sweep=imported,
            judge_version=v1,
            turn=t,
            conversation=t.conversation,
            rating=1,
            passed=True,
            explanation="Reads fine.",
        )
        for t in fr + ja + held_fr + held_ja
    )
    fr_items = []
    for i, turn in enumerate(fr):
        item = _closed_item(judge, turn)
        for n, reviewer in enumerate(reviewers):
            comment = "" if n == 0 else f"Le mot anglais entre parenthèses est lu deux fois ({i})."
            ReviewFactory(item=item, reviewer=reviewer, passed=n == 0, comment=comment, categories=[gloss] if n else [])
        AdjudicationFactory(
            item=item,
            lead=lead,
            passed=False,
            rationale="A gloss: the listener hears the word twice.",
            categories=[gloss],
        )
        GoldLabelFactory(judge=judge, turn=turn, source="adjudicated", passed=False, failure_modes=["gloss"])
        fr_items.append(item)
    ja_items = []
    for i, turn in enumerate(ja):
        item = _closed_item(judge, turn)
        for reviewer in reviewers:
            ReviewFactory(
                item=item, reviewer=reviewer, passed=False, comment=f"英語の言い換えです ({i})", categories=[wrong]
            )
        # Closing an item whose reviews agree stores its unanimous gold label.
        GoldLabelFactory(judge=judge, turn=turn, source="unanimous", passed=False)
        ja_items.append(item)
    comment = CommentFactory(turn=ja[0], author=reviewers[0], body="カタカナの後に英語が続きます。", categories=[wrong])
    held_out = held_fr + held_ja
    gold(judge, held_out, [GLOSS not in t.text for t in held_out])
    return DraftCorpus(v1=v1, fr_items=fr_items, ja_items=ja_items, comment=comment, held_out=held_out)


def add_adjudicated_glosses(lead, reviewers, corpus: DraftCorpus) -> None:
    """Two more adjudicated fr disagreements, with reviews, comments and categories."""
    judge = corpus.v1.judge
    gloss = category("gloss")
    for turn in _call(corpus.fr_items[0].dataset, "fr", [f"Le billet {GLOSS} {i}." for i in range(2)]):
        sweep = Sweep.objects.filter(kind=Sweep.Kind.IMPORT).first()
        VerdictFactory(sweep=sweep, judge_version=corpus.v1, turn=turn, rating=1, passed=True)
        item = _closed_item(judge, turn)
        for reviewer in reviewers:
            ReviewFactory(item=item, reviewer=reviewer, passed=False, comment="Glose.", categories=[gloss])
        AdjudicationFactory(item=item, lead=lead, passed=False, rationale="Gloss.", categories=[gloss])
        GoldLabelFactory(judge=judge, turn=turn, source="adjudicated", passed=False)
        CommentFactory(turn=turn, author=reviewers[1], body="Encore une glose.", categories=[gloss])
