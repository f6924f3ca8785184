"""The queue page's statements, compiled once per shape with stand-in values and bound per request, read
exactly what the ORM's querysets they were compiled from read when run with the real values: the items
of every filter, keyset and language set, and the reviewer's own numbers, for a reviewer and a lead."""

from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from reviewapp.models import ReviewItem, Role
from reviewapp.review.services import reviews
from reviewapp.triage.selectors import queue, queue_sql
from reviewapp.triage.selectors.queue_filters import QueueFilters, reason_q
from reviewapp.triage.services import claims
from tests.factories import make_item, mixed_queue

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(make_user):
    other = mixed_queue()
    ana, lead = make_user("ana", languages=["fr", "de"]), make_user("lea", role=Role.LEAD)
    first, second = ReviewItem.objects.filter(language="fr").order_by("-priority", "id")[:2]
    reviews.item_skip(item=second, user=ana, reason="pas sûre")
    reviews.review_submit(item=claims.item_claim(user=ana), user=ana, rating=2)
    claims.item_claim(user=ana)  # held under a live lease
    in_review = list(ReviewItem.objects.filter(language="de").order_by("id").values_list("pk", flat=True)[:2])
    ReviewItem.objects.filter(pk__in=in_review).update(status=ReviewItem.Status.IN_REVIEW)
    return ana, lead, other, first


def languages_of(user) -> list[str]:
    return queue.queue_languages(user, queue.groups_of(queue.count_rows(user=user, languages=None, statuses=None)))


def test_the_page_of_items_is_the_querysets_for_every_filter_and_keyset(world):
    ana, lead, other, first = world
    after = (first.priority, first.pk)
    filter_sets = [
        QueueFilters(),
        QueueFilters(language="FR"),
        QueueFilters(language="fr-ca", reason="qa_sample"),
        QueueFilters(judge="speakability"),
        QueueFilters(judge="no-such-judge"),
        QueueFilters(dataset=other.pk, reason="gold_disagrees"),
        QueueFilters(status="in_review"),
        QueueFilters(status="closed"),
        QueueFilters(language="ja"),
    ]
    compared = 0
    for user in (ana, lead):
        languages = languages_of(user)
        for filters in filter_sets:
            for keyset in (None, after):
                expected = [
                    (i.pk, i.review_count, i.reviewed_by_me)
                    for i in queue.top_items(user=user, filters=filters, languages=languages, after=keyset, limit=5)
                ]
                found = queue_sql.page_items(user=user, filters=filters, languages=languages, after=keyset, limit=5)
                assert [(i.pk, i.review_count, i.reviewed_by_me) for i in found] == expected, (user, filters, keyset)
                for item in found:
                    assert item.conversation.pk == item.conversation_id and item.turn.pk == item.turn_id
                    assert (item.claimed_by.pk if item.claimed_by else None) == item.claimed_by_id
                compared += len(expected)
    assert compared > 40  # the filters above do find items
    assert "ja" not in languages_of(ana) and "ja" in languages_of(lead)


def test_the_own_numbers_are_the_querysets(world):
    ana, lead, _, _ = world
    now = timezone.now()
    for user in (ana, lead):
        for moment in (now, now + timedelta(days=2)):  # leases run out; the day moves on
            midnight = moment.replace(hour=0, minute=0, second=0, microsecond=0)
            for start_of_day in (midnight, moment - timedelta(days=2)):
                languages = languages_of(user)
                arguments = {"now": moment, "start_of_day": start_of_day, "languages": languages}
                sees_all = user.username == "lea"
                expected = queue.progress_queryset(user_id=user.pk, sees_all=sees_all, **arguments).get()
                assert queue_sql.progress_numbers(user=user, **arguments) == expected
    numbers = queue_sql.progress_numbers(
        user=ana, now=now, start_of_day=now - timedelta(hours=1), languages=["de", "fr", "fr-CA"]
    )
    assert (numbers["reviewed"], numbers["skipped"], numbers["today"]) == (1, 1, 1) and numbers["held"] is not None


def test_a_stand_in_written_into_the_sql_is_refused():
    stand_ins = queue_sql.StandIns()
    limit = stand_ins.integer("limit")
    sql, params = queue_sql.compiled(ReviewItem.objects.order_by("id")[:limit])
    with pytest.raises(ValueError, match="limit"):
        stand_ins.statement(sql, params)


def test_codes_are_written_into_the_sql_and_everything_else_stays_a_parameter():
    template = [
        (None, ReviewItem.Status.OPEN),
        ("language 0", "text"),
        (None, '%"gold\\_disagrees"%'),  # a reason's LIKE pattern (SQLite's `icontains`)
        (None, "it's"),  # a quote: not a code
        (None, 51),
        (None, '%"a"b"%'),  # not one quoted code
        (None, "%open"),
    ]
    sql = "a = %s AND b = %s AND c LIKE %s ESCAPE '\\' AND d LIKE 'x%%' AND e = %s LIMIT %s AND f = %s AND g = %s"
    written, kept = queue_sql._choices_written(sql, template)
    assert written == (
        "a = 'open' AND b = %s AND c LIKE '%%\"gold\\_disagrees\"%%' ESCAPE '\\' AND d LIKE 'x%%' AND e = %s"
        " LIMIT %s AND f = %s AND g = %s"
    )
    assert kept == [("language 0", "text"), (None, "it's"), (None, 51), template[5], template[6]]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="containment of JSON is PostgreSQL's")
def test_a_reason_asked_by_containment_is_written_as_a_json_literal():
    from psycopg.types.json import Jsonb

    template = [(None, Jsonb(["gold_disagrees"])), (None, Jsonb({"a": 1})), (None, Jsonb(["it's"]))]
    written, kept = queue_sql._choices_written("c @> %s AND d @> %s AND e @> %s", template)
    assert written == "c @> '[\"gold_disagrees\"]'::jsonb AND d @> %s AND e @> %s"
    assert kept == template[1:]


def test_a_written_pattern_binds_to_the_same_rows_as_its_parameter():
    """The written literal's %% is read back as one % by the driver, as the statement's other text is,
    and `_` stays escaped: `goldXdisagrees` is not matched."""
    items = [make_item("fr", reasons=reasons) for reasons in (["gold_disagrees"], ["qa_sample"], ["goldXdisagrees"])]
    statement = queue_sql.StandIns().statement(
        *queue_sql.compiled(ReviewItem.objects.filter(reason_q("gold_disagrees")).values_list("pk", flat=True))
    )
    assert statement.params == ()  # the reason is in the SQL, on either database
    with connection.cursor() as cursor:
        cursor.execute(statement.sql, statement.bind({}))
        found = [row[0] for row in cursor.fetchall()]
    assert found == [items[0].pk]


def test_placeholders_that_do_not_match_the_parameters_leave_the_statement_as_it_is():
    template = [(None, "open")]
    assert queue_sql._choices_written("a = %s AND b = %s", template) == ("a = %s AND b = %s", template)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared statements are PostgreSQL's")
@pytest.mark.parametrize(
    ("reason", "index"), [("", "item_active_queue"), (ReviewItem.Reason.GOLD_DISAGREES, "item_queue_gold_disagrees")]
)
def test_the_generic_plan_of_the_page_of_items_walks_the_partial_indexes(world, reason, index):
    """PostgreSQL plans a prepared statement's first five executions for their values, then keeps one
    generic plan when it is no worse. A generic plan reaches a partial index only when the values its
    predicate names are in the SQL: with the statuses and the reason as parameters, the queue's walks
    could not use theirs, so at 1M turns every page was planned afresh (1.5 ms). Here the generic plan
    is forced, and sequential scans ruled out, as the small table would otherwise be read whole."""
    ana = world[0]
    filters = QueueFilters(reason=reason)
    _, params = queue_sql.items_sql(user=ana, filters=filters, languages=languages_of(ana), after=None, limit=51)
    with connection.cursor() as cursor:
        cursor.execute("DEALLOCATE ALL")
        cursor.execute("SET plan_cache_mode = force_generic_plan")
        cursor.execute("SET enable_seqscan = off")
        try:
            page = queue.queue_page(user=ana, filters=filters)
            cursor.execute("SELECT name FROM pg_prepared_statements WHERE statement LIKE %s", ["%ri.id IN (%"])
            ((name,),) = cursor.fetchall()
            literals = ", ".join(str(value) if isinstance(value, int) else f"'{value}'" for value in params)
            cursor.execute(f"EXPLAIN EXECUTE {name}({literals})")
            plan = "\n".join(row[0] for row in cursor.fetchall())
        finally:
            cursor.execute("RESET plan_cache_mode")
            cursor.execute("RESET enable_seqscan")
    assert page.items
    assert f"Index Only Scan using {index} " in plan or f"Index Scan using {index} " in plan, plan
