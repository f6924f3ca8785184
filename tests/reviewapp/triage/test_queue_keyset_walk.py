"""A later page of the queue (`?after=priority:id`) starts each index walk at the keyset: one walk for the
rest of that priority from that id, one for every lower priority. Given the keyset as one OR, a walk
reads it as a filter and reads every item above it first (at 1M turns, 11,000 items per language for a
middle page: an OFFSET in all but name)."""

import re

import pytest
from django.db import connection

from reviewapp.models import ReviewItem
from reviewapp.triage.selectors.queue import top_items
from reviewapp.triage.selectors.queue_filters import QueueFilters, keyset_q, keyset_ranges
from tests.factories import make_item

pytestmark = pytest.mark.django_db


def queue_order(items):
    return sorted(items, key=lambda item: (-item.priority, item.pk))


def test_pages_after_a_keyset_are_the_queue_in_order_without_gaps_or_repeats(make_user):
    # Few priorities, many items each: the keyset falls inside a run of equal priorities.
    items = [make_item(("fr", "de")[k % 2], priority=(300, 250, 100)[k % 3]) for k in range(60)]
    lead = make_user("lea", role="lead")
    seen, after = [], None
    while True:
        page = list(top_items(user=lead, filters=QueueFilters(), languages=["fr", "de"], after=after, limit=7))
        if not page:
            break
        seen += [item.pk for item in page]
        after = (page[-1].priority, page[-1].pk)
    assert seen == [item.pk for item in queue_order(items)]


def test_the_ranges_together_hold_exactly_the_rows_of_the_keyset():
    items = [make_item("fr", priority=(300, 250, 100)[k % 3]) for k in range(30)]
    keys = (("priority", 250, True), ("id", queue_order(items)[14].pk, False))
    every = ReviewItem.objects.filter(pk__in=[item.pk for item in items])
    wanted = set(every.filter(keyset_q(*keys)).values_list("pk", flat=True))
    parts = [set(every.filter(part).values_list("pk", flat=True)) for part in keyset_ranges(*keys)]
    assert len(parts) == 2 and not parts[0] & parts[1] and parts[0] | parts[1] == wanted
    assert parts[0] and parts[1] and wanted < {item.pk for item in items}


@pytest.mark.skipif(connection.vendor != "postgresql", reason="reads PostgreSQL's plans")
def test_each_walk_starts_at_the_keyset_instead_of_filtering_its_way_there(make_user):
    items = [make_item("fr", priority=250) for _ in range(300)]
    for k in range(600):  # the other languages' items, as in any real queue
        make_item(("de", "ja", "hi")[k % 3], priority=250)
    middle = queue_order(items)[150]
    lead = make_user("lea", role="lead")
    queryset = top_items(
        user=lead, filters=QueueFilters(), languages=["fr"], after=(middle.priority, middle.pk), limit=20
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE reviewapp_reviewitem")
        plan = queryset.explain(analyze=True)
    assert re.search(rf"Index Cond: \(.*id > {middle.pk}\b", plan), plan  # the walk starts at the keyset
    removed = [int(n) for n in re.findall(r"Rows Removed by Filter: (\d+)", plan)]
    assert sum(removed) < 50, plan  # not the 150 items above it, nor the other languages' 600
    assert [item.pk for item in queryset] == [item.pk for item in queue_order(items)[151:171]]
