"""Test data for every suite: one factory per model, then the few composite builders the tests share.

Factories give each row sensible defaults and build the rows it hangs from (SubFactory); pass the
parents explicitly when several rows must share them. The composite builders below are plain
functions on the factories; the values they write (texts, ratings, ids) are what the tests assert on.
"""

from __future__ import annotations

import dataclasses
import itertools

import factory
from django.contrib.auth import get_user_model
from factory.django import DjangoModelFactory

from reviewapp.models import (
    Adjudication,
    Category,
    Comment,
    Conversation,
    Dataset,
    GoldLabel,
    Judge,
    JudgeVersion,
    Profile,
    Review,
    ReviewItem,
    Role,
    Signature,
    Sweep,
    Turn,
    Verdict,
)
from tests.shipped import JUDGES, ROOT  # noqa: F401 (tests read the repo root as factories.ROOT)

PASSWORD = "pw-test-12345"
# The header htmx sends with every request it makes: `client.get(url, **HTMX)`.
HTMX = {"HTTP_HX_REQUEST": "true"}


class ProfileFactory(DjangoModelFactory):
    class Meta:
        model = Profile

    user = factory.SubFactory("tests.factories.UserFactory", profile=None)
    role = Role.REVIEWER
    languages = factory.LazyFunction(list)


class UserFactory(DjangoModelFactory):
    class Meta:
        model = get_user_model()
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user-{n}")
    password = factory.django.Password(PASSWORD)
    profile = factory.RelatedFactory(ProfileFactory, factory_related_name="user")


class DatasetFactory(DjangoModelFactory):
    class Meta:
        model = Dataset

    name = factory.Sequence(lambda n: f"dataset-{n}")


class ConversationFactory(DjangoModelFactory):
    class Meta:
        model = Conversation

    dataset = factory.SubFactory(DatasetFactory)
    external_id = factory.Sequence(lambda n: f"conversation-{n}")
    language = "fr"


class TurnFactory(DjangoModelFactory):
    class Meta:
        model = Turn

    conversation = factory.SubFactory(ConversationFactory)
    position = factory.Sequence(int)
    role = Turn.Role.AGENT
    text = factory.LazyAttribute(lambda t: f"turn {t.position}")


class JudgeFactory(DjangoModelFactory):
    class Meta:
        model = Judge

    slug = factory.Sequence(lambda n: f"judge-{n}")
    level = Judge.Level.TURN
    scale = Judge.Scale.ORDINAL


class JudgeVersionFactory(DjangoModelFactory):
    class Meta:
        model = JudgeVersion

    judge = factory.SubFactory(JudgeFactory)
    version = "v1"
    spec = factory.LazyAttribute(lambda v: {"slug": v.judge.slug})
    spec_hash = factory.LazyAttribute(lambda v: f"hash-{v.judge.slug}-{v.version}")


class SweepFactory(DjangoModelFactory):
    class Meta:
        model = Sweep

    kind = Sweep.Kind.IMPORT
    dataset = factory.SubFactory(DatasetFactory)
    status = Sweep.Status.DONE


class TurnRowFactory(DjangoModelFactory):
    """A row about one turn: its conversation is the turn's."""

    class Meta:
        abstract = True

    turn = factory.SubFactory(TurnFactory)
    conversation = factory.SelfAttribute("turn.conversation")


class JudgedTurnFactory(TurnRowFactory):
    """A row about one turn for one judge."""

    class Meta:
        abstract = True

    judge = factory.SubFactory(JudgeFactory)


class CategorizedFactory(DjangoModelFactory):
    """A row with categories: `categories=[...]` on a factory call sets them once the row is saved."""

    class Meta:
        abstract = True
        skip_postgeneration_save = True

    @factory.post_generation
    def categories(obj, create, extracted, **kwargs):
        if create and extracted:
            obj.categories.set(extracted)


class VerdictFactory(TurnRowFactory):
    class Meta:
        model = Verdict

    sweep = factory.SubFactory(SweepFactory, dataset=factory.SelfAttribute("..conversation.dataset"))
    judge_version = factory.SubFactory(JudgeVersionFactory)
    tier = Verdict.Tier.IMPORTED
    status = Verdict.Status.RESOLVED


class GoldLabelFactory(JudgedTurnFactory):
    class Meta:
        model = GoldLabel

    source = GoldLabel.Source.IMPORTED


class CategoryFactory(DjangoModelFactory):
    class Meta:
        model = Category
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"category-{n}")
    name = factory.LazyAttribute(lambda c: c.slug.replace("-", " ").capitalize())


class ReviewItemFactory(JudgedTurnFactory):
    class Meta:
        model = ReviewItem

    dataset = factory.SelfAttribute("conversation.dataset")
    language = factory.SelfAttribute("conversation.language")


class ReviewFactory(CategorizedFactory):
    class Meta:
        model = Review

    item = factory.SubFactory(ReviewItemFactory)
    reviewer = factory.SubFactory(UserFactory)


class AdjudicationFactory(CategorizedFactory):
    class Meta:
        model = Adjudication

    item = factory.SubFactory(ReviewItemFactory)
    lead = factory.SubFactory(UserFactory, profile__role=Role.LEAD)


class CommentFactory(CategorizedFactory):
    class Meta:
        model = Comment

    turn = factory.SubFactory(TurnFactory)
    author = factory.SubFactory(UserFactory)
    body = "A comment."


class SignatureFactory(DjangoModelFactory):
    class Meta:
        model = Signature

    judge = factory.SubFactory(JudgeFactory)
    language = "en"
    intent = "filler"
    kind = Signature.Kind.SUBSTRING
    pattern = "let me check that for you"
    label = "overloaded"
    rating = 1.0
    passed = False


def user(username: str, *, role: str = Role.REVIEWER, languages: list[str] | None = None, password: str = PASSWORD):
    """A user with a Tribunal role and languages (the `make_user` fixture)."""
    return UserFactory(
        username=username,
        password=password,
        profile__role=role,
        profile__languages=languages or [],
    )


def judge(slug: str = "conciseness", *, scale: str = Judge.Scale.ORDINAL, low: float = 1, high: float = 3) -> Judge:
    """The judge of that slug, made on first use (ordinal 1..3 unless told)."""
    found = Judge.objects.filter(slug=slug).first()
    return found or JudgeFactory(slug=slug, scale=scale, scale_min=low, scale_max=high)


def binary_judge(slug: str = "speakability") -> Judge:
    return judge(slug, scale=Judge.Scale.BINARY, low=0, high=1)


def version(of: Judge, label: str = "v1") -> JudgeVersion:
    """Version `label` of a judge, made on first use."""
    return JudgeVersion.objects.filter(judge=of, version=label).first() or JudgeVersionFactory(judge=of, version=label)


def judge_version(slug: str = "conciseness", level: str = Judge.Level.TURN) -> JudgeVersion:
    """Version "t1" of a judge with no scale bounds, both made on first use."""
    found = Judge.objects.filter(slug=slug).first() or JudgeFactory(slug=slug, level=level)
    return version(found, "t1")


def shipped_spec(name: str, /, **changes):
    from scoring.specs import load_specs

    spec = load_specs(JUDGES / f"{name}.yaml")[0]
    return dataclasses.replace(spec, **changes) if changes else spec


def store_judge(name: str, /, **changes) -> JudgeVersion:
    """The shipped judge `name` (judges/<name>.yaml), stored as the app stores specs."""
    from reviewapp.judging.services.judges import judge_version_store

    return judge_version_store(spec=shipped_spec(name, **changes))


def dataset(name: str = "calls", **fields) -> Dataset:
    """A dataset, not blind unless asked (blind_review=True): most tests look at what judges said."""
    return Dataset.objects.filter(name=name).first() or DatasetFactory(name=name, **{"blind_review": False, **fields})


def category(slug: str = "verbosity", name: str = "") -> Category:
    return CategoryFactory(slug=slug, name=name or slug.title())


def import_sweep(on: Dataset, name: str = "") -> Sweep:
    return SweepFactory(dataset=on, name=name)


def sweep_for(turns: list[Turn], name: str = "") -> Sweep:
    return import_sweep(turns[0].conversation.dataset, name)


def add_signature(of: Judge, *, language="en", pattern="let me check that for you", rating=1.0, passed=False, **extra):
    return SignatureFactory(judge=of, language=language, pattern=pattern, rating=rating, passed=passed, **extra)


def turn_pairs(conversation: Conversation, agent_texts, *, question: str = "Hello?", start: int = 0) -> list[Turn]:
    """A user turn (`question`, formatted with its position) before each agent turn; the agent turns."""
    agents = []
    for index, text in enumerate(agent_texts):
        position = start + 2 * index
        TurnFactory(
            conversation=conversation, position=position, role=Turn.Role.USER, text=question.format(position=position)
        )
        agents.append(TurnFactory(conversation=conversation, position=position + 1, text=text))
    return agents


def dataset_of_languages(name: str, languages: list[str], *, turns_per_conversation: int = 2) -> Dataset:
    """One conversation per language, turns alternating user/agent ("turn 0", "turn 1", ...)."""
    found = DatasetFactory(name=name, description=f"{name} description", blind_review=False)
    for index, language in enumerate(languages):
        conversation = ConversationFactory(dataset=found, external_id=f"{name}-{index}", language=language)
        Turn.objects.bulk_create(
            TurnFactory.build(conversation=conversation, position=p, role="user" if p % 2 == 0 else "agent")
            for p in range(turns_per_conversation)
        )
    return found


def dataset_of_calls(name: str, conversations: dict[str, tuple[str, list[str]]], *, reviews_required=1) -> Dataset:
    """conversations: external id -> (language, agent texts); each agent turn follows a user turn "Hello?"."""
    found = DatasetFactory(name=name, reviews_required=reviews_required)
    for external_id, (language, agent_texts) in conversations.items():
        turn_pairs(ConversationFactory(dataset=found, external_id=external_id, language=language), agent_texts)
    return found


def agent_turns(name: str, count: int, *, language: str = "fr") -> list[Turn]:
    """`count` agent turns in one new conversation of dataset `name`."""
    found = Dataset.objects.filter(name=name).first() or DatasetFactory(name=name)
    conversation = ConversationFactory(
        dataset=found, external_id=f"{name}-{Conversation.objects.count()}", language=language
    )
    return list(
        Turn.objects.bulk_create(
            TurnFactory.build(conversation=conversation, position=p, text=f"{name} turn {p} ({language})")
            for p in range(count)
        )
    )


def label_turn(turn: Turn, *, rating: float, verdict_rating: float | None, sweep: Sweep, **gold_fields) -> None:
    """Imported gold `rating` on a turn and, unless None, an imported verdict `verdict_rating`."""
    jv = judge_version()
    GoldLabelFactory(judge=jv.judge, turn=turn, rating=rating, **gold_fields)
    if verdict_rating is not None:
        VerdictFactory(
            sweep=sweep,
            judge_version=jv,
            turn=turn,
            rating=verdict_rating,
            flags=["verbosity"],
            explanation="Too long by ear.",
        )


def verdicts(sweep: Sweep, jv: JudgeVersion, turns: list[Turn], passed: list[bool | None], *, run_index: int = 0):
    """Imported pass/fail verdicts (None: unresolved); failures flag "gloss"."""
    return Verdict.objects.bulk_create(
        VerdictFactory.build(
            sweep=sweep,
            judge_version=jv,
            turn=t,
            conversation=t.conversation,
            run_index=run_index,
            status=Verdict.Status.RESOLVED if p is not None else Verdict.Status.UNRESOLVED,
            passed=p,
            flags=["gloss"] if p is False else [],
            explanation="Glossed." if p is False else "Fine.",
        )
        for t, p in zip(turns, passed, strict=True)
    )


def gold(of: Judge, turns: list[Turn], passed: list[bool], *, source: str = GoldLabel.Source.IMPORTED, modes=()):
    return GoldLabel.objects.bulk_create(
        GoldLabelFactory.build(
            judge=of,
            turn=t,
            conversation=t.conversation,
            source=source,
            passed=p,
            failure_modes=list(modes) if not p else [],
        )
        for t, p in zip(turns, passed, strict=True)
    )


def item(of: Judge, turn: Turn, *, status=ReviewItem.Status.AWAITING_ADJUDICATION, reasons=None, weight=1.0, **fields):
    reasons = reasons or [ReviewItem.Reason.JUDGES_DISAGREE]
    return ReviewItemFactory(judge=of, turn=turn, reasons=reasons, status=status, sample_weight=weight, **fields)


def mixed_queue() -> Dataset:
    """24 review items over four languages (fr, fr-CA, de, ja), three mixes of reasons, five priorities
    and two judges, a third of them on a second dataset, which is returned."""
    other = dataset("other calls")
    judge("speakability")
    for k in range(24):
        make_item(
            ("fr", "fr-CA", "de", "ja")[k % 4],
            reasons=(["unresolved"], ["qa_sample"], ["gold_disagrees", "qa_sample"])[k % 3],
            priority=100 + k % 5,
            judge_slug=("conciseness", "speakability")[k % 2],
            on=other if k % 3 == 0 else None,
        )
    return other


def judged_turns(passed: list[bool | None], *, name: str = "calls", label: str = "v1") -> list[Turn]:
    """One agent turn per entry in a new French call of dataset `name`, each with the binary judge's
    (binary_judge()) imported verdict of version `label`: pass, fail or unresolved (None)."""
    turns = agent_turns(name, len(passed))
    verdicts(sweep_for(turns), version(binary_judge(), label), turns, passed)
    return turns


def disputed_item(passing, failing, *, failing_categories=("gloss",), reviews_required: int = 1) -> ReviewItem:
    """A French turn the binary judge fails; reviewer `passing` says pass, `failing` says fail: it waits
    for a lead."""
    turn = judged_turns([False])[0]
    found = item(binary_judge(), turn, reviews_required=reviews_required)
    review(found, passing, passed=True)
    review(found, failing, passed=False, categories=[category(slug) for slug in failing_categories])
    return found


def review(review_item: ReviewItem, reviewer, *, passed: bool, categories: list[Category] = (), seconds: int = 60):
    return ReviewFactory(
        item=review_item, reviewer=reviewer, passed=passed, seconds_spent=seconds, categories=list(categories)
    )


_calls = itertools.count()


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
    """One call (caller turn, agent turn under review, caller turn) with one imported verdict and an item."""
    found = judge(judge_slug) if judge_slug == "conciseness" else Judge.objects.get(slug=judge_slug)
    data = on or dataset()
    conversation = ConversationFactory(dataset=data, external_id=f"conv-{next(_calls)}", language=language)
    caller, agent = {"role": Turn.Role.USER}, {"text": text, "intended_text": intended_text}
    Turn.objects.bulk_create(
        TurnFactory.build(conversation=conversation, position=p, audio_start_ms=start, audio_end_ms=end, **fields)
        for p, start, end, fields in (
            (0, 0, 1500, {**caller, "text": "Bonjour, mon vol ?"}),
            (1, 1900, 4200, agent),
            (2, 4600, 5400, {**caller, "text": "Merci."}),
        )
    )
    turn = conversation.turns.get(position=1)
    sweep = Sweep.objects.filter(kind=Sweep.Kind.IMPORT, dataset=data).first() or import_sweep(data)
    VerdictFactory(
        sweep=sweep,
        judge_version=version(found),
        turn=turn,
        status=verdict_status,
        rating=verdict_rating if verdict_status == Verdict.Status.RESOLVED else None,
        passed=verdict_passed,
        flags=["verbosity"],
        explanation="Un peu long pour l'oral.",
    )
    return ReviewItemFactory(
        judge=found,
        turn=turn,
        dataset=data,
        reasons=reasons or [ReviewItem.Reason.UNRESOLVED],
        priority=priority,
        reviews_required=reviews_required,
    )
