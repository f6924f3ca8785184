"""The review screen's hand-written reads (reviewapp/review/selectors/screen_sql.py) give what the ORM
reads they replace give: the same item, related rows and fields, the same verdict order, the same turn
window, and the comments `access.comments_visible_to` lets each person read."""

import pytest
from django.db import connection, transaction
from django.utils import timezone

from reviewapp.models import Conversation, JudgeVersion, ReviewItem, Role, Turn, Verdict
from reviewapp.review.selectors import review_screen, screen_sql, verdict_shapes
from reviewapp.review.services import reviews
from reviewapp.triage.services import claims
from tests.factories import CommentFactory, category, dataset, make_item
from tests.factories import user as make_user

pytestmark = pytest.mark.django_db


def orm_item(pk: int) -> ReviewItem:
    related = ("judge", "dataset", "conversation__dataset", "turn", "claimed_by")
    return ReviewItem.objects.select_related(*related).annotate(**verdict_shapes.grain_annotations()).get(pk=pk)


def fields(obj) -> dict:
    return {f.attname: getattr(obj, f.attname) for f in obj._meta.concrete_fields}


def test_the_item_and_its_related_rows_are_the_orms():
    ana = make_user("ana", languages=["fr"])
    item = make_item("fr", reasons=["qa_sample", "gold_disagrees"], reviews_required=2)
    item.lead_note = "Écoutez la fin."
    item.save()
    claims.item_claim(user=ana, item=item)

    read = review_screen.item_for_review(item_id=item.pk, user=ana)
    expected = orm_item(item.pk)

    assert fields(read) == fields(expected)
    assert read.reasons == ["qa_sample", "gold_disagrees"] and read.lease_expires_at > timezone.now()
    for name in ("judge", "dataset", "conversation", "turn", "claimed_by"):
        assert fields(getattr(read, name)) == fields(getattr(expected, name)), name
    assert fields(read.conversation.dataset) == fields(expected.conversation.dataset)
    assert read.claimed_by.username == "ana"
    assert (read.grain_version_id, read.grain_version_spec) == (expected.grain_version_id, expected.grain_version_spec)
    assert read.labelled is False and read.turn_qa_blind is True


def test_an_unclaimed_item_has_no_holder_and_a_missing_one_is_not_found():
    ana = make_user("ana", languages=["fr"])
    item = make_item("fr")
    read = review_screen.item_for_review(item_id=item.pk, user=ana)
    assert read.claimed_by is None and read.claimed_by_id is None and read.turn_qa_blind is False
    with pytest.raises(ReviewItem.DoesNotExist):
        review_screen.item_for_review(item_id=item.pk + 1000, user=ana)


def test_the_grain_skips_imported_placeholders_and_labelled_follows_the_target():
    ana = make_user("ana", languages=["fr"])
    item = make_item("fr")
    version = JudgeVersion.objects.get(judge=item.judge)
    version.spec = {"slug": "conciseness", "failure_modes": ["gloss", "verbosity"]}
    version.save()
    for n in range(3):
        JudgeVersion.objects.create(
            judge=item.judge, version=f"imp-{n}", spec={"imported": True}, spec_hash=f"{n:064d}"
        )
    other_judge_item = make_item("fr")  # another item; ana labels it, not this one's target
    reviews.review_submit(item=claims.item_claim(user=ana, item=other_judge_item), user=ana, rating=2)

    read = review_screen.item_for_review(item_id=item.pk, user=ana)

    assert read.grain_version_id == version.pk
    assert verdict_shapes.annotated_grain(read).failure_modes == ("gloss", "verbosity")
    assert read.labelled is False
    assert review_screen.item_for_review(item_id=other_judge_item.pk, user=ana).labelled is True


def test_verdicts_come_newest_version_first_then_by_run_with_their_version_sweep_and_judge():
    item = make_item("fr")
    first = Verdict.objects.get(turn=item.turn)
    newer = JudgeVersion.objects.create(judge=item.judge, version="v2", spec={"slug": "x"}, spec_hash="h2")
    for run, version in ((2, first.judge_version), (1, newer), (0, newer)):
        Verdict.objects.create(
            sweep=first.sweep, judge_version=version, conversation=item.conversation, turn=item.turn, run_index=run
        )
    read = review_screen.item_verdicts(item=review_screen.item_for_review(item_id=item.pk, user=make_user("x")))
    expected = list(
        Verdict.objects.filter(turn=item.turn).order_by("-judge_version__created_at", "sweep_id", "run_index", "pk")
    )
    assert [v.pk for v in read] == [v.pk for v in expected]
    assert [(v.judge_version.version, v.run_index) for v in read] == [("v2", 0), ("v2", 1), ("v1", 0), ("v1", 2)]
    assert read[0].judge_version.judge.slug == "conciseness" and read[0].sweep.pk == first.sweep_id
    assert read[0].signature is None and read[0].flags == [] and read[-1].flags == []


def _reviewed_with_verdicts() -> tuple:
    """A turn's item with two reviews and verdicts of two versions (one on the whole conversation), and
    a conversation's item with none of its own."""
    ana, ben = make_user("ana", languages=["fr"]), make_user("ben", languages=["fr"])
    item = make_item("fr", reviews_required=3)
    first = Verdict.objects.get(turn=item.turn)
    newer = JudgeVersion.objects.create(judge=item.judge, version="v2", spec={"slug": "x"}, spec_hash="h2")
    for run, version, turn in ((2, first.judge_version, item.turn), (1, newer, item.turn), (0, newer, None)):
        Verdict.objects.create(
            sweep=first.sweep, judge_version=version, conversation=item.conversation, turn=turn, run_index=run
        )
    for person in (ben, ana):
        reviews.review_submit(item=claims.item_claim(user=person, item=item), user=person, rating=2)
    conversation_item = ReviewItem.objects.create(
        judge=item.judge, dataset=item.dataset, conversation=item.conversation, turn=None, language="fr"
    )
    return ana, item, conversation_item


def _same_as_the_two_reads(read, together, verdicts) -> None:
    apart = screen_sql.item_reviews(item=read)
    expected = screen_sql.target_verdicts(item=read)
    assert [fields(r) for r in together] == [fields(r) for r in apart]
    assert [fields(r.reviewer) for r in together] == [fields(r.reviewer) for r in apart]
    assert [fields(v) for v in verdicts] == [fields(v) for v in expected]
    assert [(fields(v.judge_version), fields(v.sweep)) for v in verdicts] == [
        (fields(v.judge_version), fields(v.sweep)) for v in expected
    ]


def test_submit_reads_the_reviews_and_the_verdicts_in_one_statement_as_the_two_reads(django_assert_num_queries):
    """`reviews_and_verdicts` (submitting a label) gives what `item_reviews` and `target_verdicts` give,
    in their orders, for a turn's item and for a conversation's, and never another target's verdicts."""
    ana, item, conversation_item = _reviewed_with_verdicts()
    for target in (item, conversation_item):
        read = review_screen.item_for_review(item_id=target.pk, user=ana)
        with django_assert_num_queries(1):
            together, verdicts = screen_sql.reviews_and_verdicts(item=read)
        _same_as_the_two_reads(read, together, verdicts)
    assert [r.reviewer.username for r in together] == [] and [v.run_index for v in verdicts] == [0]
    _, verdicts = screen_sql.reviews_and_verdicts(item=review_screen.item_for_review(item_id=item.pk, user=ana))
    assert [(v.judge_version.version, v.run_index) for v in verdicts] == [("v2", 1), ("v1", 0), ("v1", 2)]
    together, _ = screen_sql.reviews_and_verdicts(item=review_screen.item_for_review(item_id=item.pk, user=ana))
    assert [r.reviewer.username for r in together] == ["ben", "ana"]


def test_on_sqlite_the_locked_read_of_the_item_brings_its_reviews_and_verdicts_once(django_assert_num_queries):
    """SQLite's transaction holds the write lock from its BEGIN: the submit's read of the item under its
    lock gives its reviews and verdicts too, taken once. PostgreSQL reads them after the lock."""
    ana, item, conversation_item = _reviewed_with_verdicts()
    for target in (item, conversation_item):
        with transaction.atomic():
            with django_assert_num_queries(1):
                read = review_screen.item_for_review(item_id=target.pk, user=ana, lock=True)
            assert fields(read) == fields(orm_item(target.pk)) and read.judge_signed is False
            with django_assert_num_queries(0 if connection.vendor == "sqlite" else 1):
                together, verdicts = screen_sql.reviews_and_verdicts(item=read)
            _same_as_the_two_reads(read, together, verdicts)
            with django_assert_num_queries(1):  # taken once: a second ask reads again
                assert screen_sql.reviews_and_verdicts(item=read)[1] == verdicts
    assert [(v.judge_version.version, v.run_index) for v in verdicts] == [("v2", 0)]
    with pytest.raises(ReviewItem.DoesNotExist), transaction.atomic():
        review_screen.item_for_review(item_id=item.pk + 1000, user=ana, lock=True)


@pytest.mark.parametrize(
    ("target", "expected"), [(0, [0, 1, 2, 3, 4]), (3, [0, 1, 2, 3, 4, 5, 6, 7]), (9, [5, 6, 7, 8, 9])]
)
def test_the_turn_window_is_four_before_and_four_after(target, expected):
    conversation = make_item("fr").conversation
    Turn.objects.filter(conversation=conversation).delete()
    Turn.objects.bulk_create(
        Turn(conversation=conversation, position=p * 10, role="agent", text=f"T{p}") for p in range(10)
    )
    window = [
        t.position // 10
        for t in review_screen.screen_sql.window_turns(conversation_id=conversation.pk, position=target * 10, around=4)
    ]
    assert window == expected


def _visible(user, turn_id):
    """The threads of the comments page's read, whose filter is access.comments_visible_to."""
    return {c.pk for top in review_screen.turn_comments(turn_id=turn_id, user=user) for c in [top, *top.thread]}


def _shown(user, item):
    read = review_screen.item_for_review(item_id=item.pk, user=user)
    return {c.pk for top in review_screen.screen_comments(item=read, user=user) for c in [top, *top.thread]}


@pytest.mark.parametrize("case", ["plain", "blind dataset", "qa sample", "qa sample labelled", "moved language"])
def test_the_screen_shows_the_comments_the_access_rule_lets_each_person_read(case):
    ana = make_user("ana", languages=["fr"])
    bob = make_user("bob", languages=["fr"])
    lead = make_user("lea", role=Role.LEAD)
    on = dataset("blind", blind_review=True) if case == "blind dataset" else None
    qa = case.startswith("qa sample")
    item = make_item("fr", on=on, reasons=["qa_sample"] if qa else None, reviews_required=2 if qa else 1)
    mine = CommentFactory(turn=item.turn, author=ana, body="Le mien.")
    theirs = CommentFactory(turn=item.turn, author=bob, body="Le sien.")
    reply = CommentFactory(turn=item.turn, author=bob, body="Réponse.", parent=mine)
    mine.categories.add(category("gloss"))
    if case == "qa sample labelled":
        reviews.review_submit(item=claims.item_claim(user=ana, item=item), user=ana, rating=2)
    if case == "moved language":  # the item went to another language; its conversation did not
        Conversation.objects.filter(pk=item.conversation_id).update(language="de")

    for person in (ana, bob, lead):
        assert _shown(person, item) == _visible(person, item.turn_id), (case, person.username)
    if case == "plain":
        assert _shown(ana, item) == {mine.pk, theirs.pk, reply.pk}
    if case in ("blind dataset", "qa sample"):
        assert _shown(ana, item) == {mine.pk} and _shown(bob, item) == {theirs.pk}  # bob's reply hangs on ana's
    read = review_screen.item_for_review(item_id=item.pk, user=lead)
    threads = review_screen.screen_comments(item=read, user=lead)
    if case != "moved language":
        assert [c.body for c in threads] == ["Le mien.", "Le sien."] and [c.body for c in threads[0].thread] == [
            "Réponse."
        ]
        assert [c.slug for c in threads[0].categories.all()] == ["gloss"] and threads[0].author.username == "ana"


def test_the_screen_offers_the_active_categories_by_name():
    from reviewapp.review.selectors.comments import active_categories

    for slug, name in (("wrong-term", "Wrong term"), ("accent", "Accent"), ("gloss", "Gloss")):
        category(slug, name)
    category("retired", "Old").__class__.objects.filter(slug="retired").update(active=False)
    read = review_screen.screen_sql.active_categories()
    assert [c.name for c in read] == ["Accent", "Gloss", "Wrong term"]
    assert [fields(c) for c in read] == [fields(c) for c in active_categories()]
