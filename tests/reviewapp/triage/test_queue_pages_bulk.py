"""The queue page by keyset ("after this item", never OFFSET) with links that keep the filters, and
the leads' bulk actions (close, re-prioritise, reassign language, send back), audited."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from reviewapp.models import AuditEvent, Review, ReviewItem, Role
from reviewapp.triage.selectors.queue_filters import QUEUE_PAGE_SIZE
from tests.factories import HTMX, dataset, make_item

pytestmark = pytest.mark.django_db
NEXT_LINK = re.compile(r'id="queue-next-page" href="([^"]+)"')


def page_ids(response) -> list[int]:
    return [item.pk for item in response.context["queue"].items]


def test_next_page_links_walk_every_item_once_in_queue_order_and_keep_the_filters(client, make_user):
    for n in range(2 * QUEUE_PAGE_SIZE + 7):
        # Few distinct priorities, so pages break inside a run of equal priorities.
        make_item("fr", priority=(n % 4) * 10, reasons=["unresolved"])
        if n % 10 == 0:
            make_item("fr", priority=(n % 4) * 10, reasons=["qa_sample"])
    client.force_login(make_user("ana", languages=["fr"]))
    expected = list(
        ReviewItem.objects.filter(reasons__icontains='"unresolved"')
        .order_by("-priority", "id")
        .values_list("pk", flat=True)
    )

    seen, url, pages = [], reverse("queue_index") + "?reason=unresolved", 0
    while url:
        with CaptureQueriesContext(connection) as queries:
            response = client.get(url.replace("&amp;", "&"))
        assert response.status_code == 200
        assert not any("OFFSET" in q["sql"].upper() for q in queries.captured_queries)
        seen += page_ids(response)
        pages += 1
        found = NEXT_LINK.search(response.content.decode())
        url = found.group(1) if found else ""
        if url:
            assert "reason=unresolved" in url and "after=" in url
    assert len(expected) == 2 * QUEUE_PAGE_SIZE + 7
    assert seen == expected and pages == 3


def test_a_later_page_costs_the_same_queries_and_comes_as_a_fragment(client, make_user, django_assert_num_queries):
    for n in range(QUEUE_PAGE_SIZE + 5):
        make_item("fr", priority=n)
    client.force_login(make_user("ana", languages=["fr"]))
    first = client.get(reverse("queue_index"))
    cursor = first.context["queue"].next_after
    with CaptureQueriesContext(connection) as counted:
        client.get(reverse("queue_index"))
    with django_assert_num_queries(len(counted.captured_queries)):
        later = client.get(reverse("queue_index"), {"after": cursor}, **HTMX)
    html = later.content.decode()
    assert "<html" not in html and 'id="queue-results"' in html and "First page" in html
    assert len(page_ids(later)) == 5 and not set(page_ids(later)) & set(page_ids(first))


def test_junk_cursors_show_the_first_page_and_say_so(client, make_user):
    make_item("fr")
    client.force_login(make_user("ana", languages=["fr"]))
    for junk in ("x", "1:", ":1", "99999999999:1", "1:2:3", "\x00"):
        response = client.get(reverse("queue_index"), {"after": junk})
        assert response.status_code == 200 and len(page_ids(response)) == 1


@pytest.fixture
def lead(make_user):
    return make_user("lea", role=Role.LEAD)


def test_reviewers_get_no_bulk_form_and_may_not_post_it(client, make_user):
    item = make_item("fr")
    client.force_login(make_user("ana", languages=["fr"]))
    assert 'id="bulk-form"' not in client.get(reverse("queue_index")).content.decode()
    assert client.post(reverse("queue_bulk"), {"action": "close", "items": [item.pk]}).status_code == 403
    assert ReviewItem.objects.get(pk=item.pk).status == ReviewItem.Status.OPEN


def test_lead_closes_items_in_bulk_with_an_audit_event_each(client, lead):
    first, second, third = (make_item("fr", priority=p) for p in (3, 2, 1))
    client.force_login(lead)
    assert 'id="bulk-form"' in client.get(reverse("queue_index")).content.decode()

    response = client.post(
        reverse("queue_bulk"), {"action": "close", "items": [first.pk, second.pk], "reason": "unresolved"}, **HTMX
    )

    assert response.status_code == 200
    assert response["HX-Redirect"] == reverse("queue_index") + "?reason=unresolved&done=close%3A2"
    statuses = dict(ReviewItem.objects.values_list("pk", "status"))
    assert statuses == {first.pk: "closed", second.pk: "closed", third.pk: "open"}
    events = AuditEvent.objects.filter(action="item.bulk_close").order_by("object_id")
    assert [e.object_id for e in events] == [str(first.pk), str(second.pk)]
    assert all(e.actor == lead and e.before["status"] == "open" and e.after["status"] == "closed" for e in events)
    assert "Closed 2 items." in client.get(response["HX-Redirect"]).content.decode()


def test_lead_reprioritises_and_reassigns_language(client, lead):
    item = make_item("fr-CA", priority=5)
    client.force_login(lead)
    assert (
        client.post(
            reverse("queue_bulk"), {"action": "reprioritise", "items": [item.pk], "priority": "750"}
        ).status_code
        == 302
    )
    assert (
        client.post(
            reverse("queue_bulk"), {"action": "reassign_language", "items": [item.pk], "language": "fr"}
        ).status_code
        == 302
    )
    item.refresh_from_db()
    assert item.priority == 750 and item.language == "fr"
    assert AuditEvent.objects.get(action="item.bulk_reprioritise").before["priority"] == 5
    assert AuditEvent.objects.get(action="item.bulk_reassign_language").after["language"] == "fr"


@pytest.mark.parametrize(
    ("post", "message"),
    [
        ({"action": "reassign_language", "language": '"><svg onload=1>'}, "is not a BCP 47 language code"),
        ({"action": "reprioritise"}, "Give a priority"),
        ({"action": "send_back", "note": "encore"}, "only items awaiting adjudication"),
        ({"action": "send_back"}, "Say what reviewers should look at again"),
        ({"action": "explode"}, "Select a valid choice"),
    ],
)
def test_refused_bulk_actions_show_why_in_place_and_write_nothing(client, lead, post, message):
    item = make_item("fr", priority=5)
    client.force_login(lead)
    response = client.post(reverse("queue_bulk"), {**post, "items": [item.pk]}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 400 and "<html" not in html and 'id="bulk-errors"' in html
    assert message in html.replace("&#x27;", "'").replace("&quot;", '"')
    item.refresh_from_db()
    assert item.priority == 5 and item.language == "fr" and item.status == "open"
    assert not AuditEvent.objects.filter(action__startswith="item.bulk").exists()


def test_bulk_send_back_is_all_or_nothing(client, lead, make_user):
    ana = make_user("ana", languages=["fr"])
    disputed = make_item("fr", on=dataset("d"))
    Review.objects.create(item=disputed, reviewer=ana, rating=1)
    disputed.status = ReviewItem.Status.AWAITING_ADJUDICATION
    disputed.save()
    still_open = make_item("fr", on=dataset("d"))
    client.force_login(lead)

    refused = client.post(
        reverse("queue_bulk"),
        {
            "action": "send_back",
            "note": "à revoir",
            "items": [disputed.pk, still_open.pk],
            "status": "awaiting_adjudication",
        },
    )
    assert refused.status_code == 400
    assert ReviewItem.objects.get(pk=disputed.pk).status == ReviewItem.Status.AWAITING_ADJUDICATION

    done = client.post(
        reverse("queue_bulk"), {"action": "send_back", "note": "à revoir", "to": "original", "items": [disputed.pk]}
    )
    assert done.status_code == 302
    assert ReviewItem.objects.get(pk=disputed.pk).status == ReviewItem.Status.OPEN
    assert Review.objects.get(item=disputed).revision_requested
    page = client.get(reverse("queue_index")).content.decode()
    assert "sent back: ana can take it" in page
