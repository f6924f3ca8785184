"""The queue page (first, later, filtered, fragment, lead), the review screen, claim and submit run the
same number of queries whatever the data holds: each is counted at a small size, then again after the
data grew tenfold (more items, a longer conversation, more labels given), and must cost exactly the
same, within a fixed bound. The counts include the request's session read (with its user and their
profile) and, inside the test's transaction, each write's SAVEPOINT and RELEASE."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from reviewapp.models import ReviewItem, Role, Turn
from reviewapp.review.services import reviews
from reviewapp.triage.services import claims
from tests.factories import HTMX, make_item

pytestmark = pytest.mark.django_db
LANGUAGES = ("fr", "fr-CA", "de")
REASONS = (["unresolved"], ["qa_sample"], ["gold_disagrees", "qa_sample"])
# What each operation may cost at most, on any database.
# A submit with the next claim on SQLite: the session with its user; BEGIN, the item under the write lock
# with its reviews and verdicts, the review, the gold, the item, the audit events, COMMIT; then the claim
# (BEGIN, languages, the held or first claimable item, its UPDATE, its audit event, COMMIT).
PAGE, SCREEN, CLAIM, SUBMIT = 5, 7, 7, 14
if connection.vendor == "postgresql":
    # The session with its user, languages, the held and claimable items in one read, the take with its
    # audit event. A submit: BEGIN, the item under its lock, its reviews with its verdicts, every write in
    # one statement, COMMIT; then the claim.
    CLAIM, SUBMIT = 4, 9


def grow(n: int) -> None:
    for k in range(n):
        make_item(LANGUAGES[k % 3], reasons=REASONS[k % 3], priority=100 + k % 4)


def queries(call) -> int:
    with CaptureQueriesContext(connection) as captured:
        call()
    return len(captured)


@pytest.fixture
def ana(make_user):
    return make_user("ana", languages=["fr", "de"])


def test_every_queue_page_costs_the_same_at_3_and_30_items(
    client, ana, make_user, django_assert_num_queries, django_assert_max_num_queries
):
    lead = make_user("lea", role=Role.LEAD)
    grow(3)
    reviews.item_skip(item=ReviewItem.objects.order_by("pk").first(), user=ana, reason="pas sûre")
    first = ReviewItem.objects.order_by("-priority", "pk").first()
    pages = {
        "first": ({}, {}),
        "later (keyset)": ({"after": f"{first.priority}:{first.pk}"}, {}),
        "filtered": ({"reason": "gold_disagrees", "language": "fr"}, {}),
        "fragment": ({}, HTMX),
    }

    def page(params, headers, as_user=ana):
        client.force_login(as_user)
        return lambda: client.get(reverse("queue_index"), params, **headers).status_code == 200 or pytest.fail()

    small = {}
    for name, (params, headers) in pages.items():
        call = page(params, headers)
        call()  # the session is written once, at login
        with django_assert_max_num_queries(PAGE):
            call()
        small[name] = queries(call)
    lead_call = page({}, {}, lead)
    lead_call()
    small_lead = queries(lead_call)

    grow(27)
    for _ in range(3):  # labels given grow the reviewer's own numbers, not the page's cost
        reviews.review_submit(item=claims.item_claim(user=ana), user=ana, rating=2)
    for name, (params, headers) in pages.items():
        call = page(params, headers)
        call()
        with django_assert_num_queries(small[name]):
            call()
    lead_call = page({}, {}, lead)
    lead_call()
    with django_assert_num_queries(small_lead):
        lead_call()
    assert small_lead <= PAGE


def test_the_review_screen_costs_the_same_for_a_short_and_a_long_conversation(
    client, ana, django_assert_num_queries, django_assert_max_num_queries
):
    short = make_item("fr")
    client.force_login(ana)
    claims.item_claim(user=ana, item=short)
    with django_assert_max_num_queries(SCREEN):
        assert client.get(reverse("review_item", args=[short.pk])).status_code == 200
    cost = queries(lambda: client.get(reverse("review_item", args=[short.pk])))

    long = make_item("fr")
    Turn.objects.bulk_create(
        Turn(conversation=long.conversation, position=p, role="agent" if p % 2 else "user", text=f"Tour {p}.")
        for p in range(3, 60)
    )
    grow(27)
    claims.item_claim(user=ana, item=long)
    with django_assert_num_queries(cost):
        response = client.get(reverse("review_item", args=[long.pk]))
    assert response.status_code == 200
    # The window: the target (position 1), the one turn before it and the four after it, of sixty.
    assert [t.position for t in response.context["screen"].turns] == [0, 1, 2, 3, 4, 5]
    assert response.context["screen"].turn.pk == long.turn_id


def test_claim_and_submit_cost_the_same_at_8_and_80_items(
    client, ana, django_assert_num_queries, django_assert_max_num_queries
):
    grow(8)
    client.force_login(ana)

    def claim() -> int:
        response = client.post(reverse("queue_next"))
        assert response.status_code == 302 and "/review/" in response.url
        return int(response.url.rstrip("/").rsplit("/", 1)[1])

    def submit(item_id: int):
        response = client.post(reverse("review_item", args=[item_id]), {"rating": "2"})
        assert response.status_code == 302

    # The first "start reviewing" also remembers the filters in the session; later ones do not write it.
    reviews.item_skip(item=ReviewItem.objects.get(pk=claim()), user=ana, reason="pas sûre")
    with django_assert_max_num_queries(CLAIM):
        held = claim()
    reviews.item_skip(item=ReviewItem.objects.get(pk=held), user=ana, reason="pas sûre")
    claim_cost = queries(claim)
    held = claim()  # resumes the same item
    with django_assert_max_num_queries(SUBMIT):
        submit(held)
    held = claim()
    submit_cost = queries(lambda: submit(held))

    grow(72)
    for _ in range(4):
        submit(claim())
    reviews.item_skip(item=ReviewItem.objects.get(pk=claim()), user=ana, reason="x")
    with django_assert_num_queries(claim_cost):
        held = claim()
    with django_assert_num_queries(submit_cost):
        submit(held)
