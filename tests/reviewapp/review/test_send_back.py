"""Sending a disputed item back: to its reviewers (who revise) or to any reviewer of the language, and
never to nobody: the lead sees who can take it, and a send-back nobody could take is refused."""

from __future__ import annotations

import pytest
from django.urls import reverse

from reviewapp.adjudication.services import adjudication as service
from reviewapp.models import AuditEvent, GoldLabel, Review, ReviewItem, Role
from reviewapp.review.services import reviews
from reviewapp.triage.selectors.progress import item_takers
from reviewapp.triage.services import claims
from tests import factories

pytestmark = pytest.mark.django_db
Status = ReviewItem.Status


@pytest.fixture
def dispute(make_user):
    """A French turn the judge fails; ana says pass, bea says fail: it waits for a lead."""
    ana, bea = make_user("ana", languages=["fr"]), make_user("bea", languages=["fr"])
    return factories.disputed_item(ana, bea, failing_categories=(), reviews_required=2)


def test_sent_back_to_its_reviewers_only_they_can_take_it_and_they_revise(dispute, make_user):
    lead = make_user("lea", role=Role.LEAD)
    cleo = make_user("cleo", languages=["fr"])
    ana, bea = (Review.objects.get(item=dispute, reviewer__username=name).reviewer for name in ("ana", "bea"))

    service.item_send_back(item=dispute, lead=lead, note="Écoutez l'audio.", to="original")

    dispute.refresh_from_db()
    assert dispute.status == Status.OPEN and dispute.reviews_required == 2
    assert set(
        Review.objects.filter(item=dispute, revision_requested=True).values_list("reviewer__username", flat=True)
    ) == {"ana", "bea"}
    assert item_takers(items=[dispute])[dispute.pk].current == ["ana", "bea"]
    assert claims.item_claim(user=cleo) is None  # not theirs
    with pytest.raises(claims.ReviewError, match="sent this item back"):
        reviews.review_submit(item=dispute, user=cleo, passed=False)

    assert claims.item_claim(user=ana).pk == dispute.pk
    reviews.review_submit(item=dispute, user=ana, rating=0)  # ana changes her mind: fail
    dispute.refresh_from_db()
    assert dispute.status == Status.IN_REVIEW  # bea has not looked again yet
    assert Review.objects.filter(item=dispute).count() == 2
    revised = AuditEvent.objects.get(action="review.revise")
    assert revised.before["passed"] is True and revised.after["passed"] is False

    assert claims.item_claim(user=bea).pk == dispute.pk
    reviews.review_submit(item=dispute, user=bea, rating=0)
    dispute.refresh_from_db()
    assert dispute.status == Status.CLOSED
    assert GoldLabel.objects.get(turn=dispute.turn, source=GoldLabel.Source.UNANIMOUS).passed is False


def test_sent_back_to_anyone_it_needs_one_fresh_review(dispute, make_user):
    lead = make_user("lea", role=Role.LEAD)
    cleo = make_user("cleo", languages=["fr-CA", "fr"])
    make_user("dan", languages=["de"])

    assert item_takers(items=[dispute])[dispute.pk].anyone == ["cleo"]
    service.item_send_back(item=dispute, lead=lead, note="Un avis de plus.", to="any")

    dispute.refresh_from_db()
    assert dispute.status == Status.OPEN and dispute.reviews_required == 3
    event = AuditEvent.objects.get(action="item.send_back")
    assert event.after["to"] == "any" and event.after["takers"] == ["cleo"]
    assert event.before["reviews_required"] == 2 and event.after["reviews_required"] == 3
    ana = Review.objects.get(item=dispute, reviewer__username="ana").reviewer
    assert claims.item_claim(user=ana) is None
    assert claims.item_claim(user=cleo).pk == dispute.pk
    reviews.review_submit(item=dispute, user=cleo, rating=0)
    dispute.refresh_from_db()
    assert dispute.status == Status.AWAITING_ADJUDICATION  # ana still says pass


def test_a_send_back_nobody_could_take_is_refused_and_shown(client, dispute, make_user):
    lead = make_user("lea", role=Role.LEAD)
    with pytest.raises(service.AdjudicationError, match="No reviewer of fr is left"):
        service.item_send_back(item=dispute, lead=lead, note="Encore.", to="any")
    for review in Review.objects.filter(item=dispute).select_related("reviewer"):
        review.reviewer.is_active = False
        review.reviewer.save()
    with pytest.raises(service.AdjudicationError, match="None of item"):
        service.item_send_back(item=dispute, lead=lead, note="Encore.", to="original")
    dispute.refresh_from_db()
    assert dispute.status == Status.AWAITING_ADJUDICATION
    assert not AuditEvent.objects.filter(action="item.send_back").exists()

    client.force_login(lead)
    page = client.get(reverse("dispute_detail", args=[dispute.pk])).content.decode()
    assert page.count("nobody can take it") == 2
    refused = client.post(reverse("dispute_send_back", args=[dispute.pk]), {"note": "Encore.", "to": "any"})
    assert refused.status_code == 400 and "No reviewer of fr is left" in refused.content.decode()


def test_the_dispute_page_names_who_can_take_it(client, dispute, make_user):
    make_user("cleo", languages=["fr"])
    client.force_login(make_user("lea", role=Role.LEAD))
    page = client.get(reverse("dispute_detail", args=[dispute.pk])).content.decode()
    assert "can take it: ana, bea" in page and "can take it: cleo" in page


def test_a_reviewer_asked_to_revise_gets_the_form_again_and_revises_from_the_screen(client, dispute, make_user):
    service.item_send_back(item=dispute, lead=make_user("lea", role=Role.LEAD), note="Écoutez encore.", to="original")
    ana = Review.objects.get(item=dispute, reviewer__username="ana").reviewer
    client.force_login(ana)
    started = client.post(reverse("queue_next"))
    assert started.url == reverse("review_item", args=[dispute.pk])
    screen = client.get(started.url).content.decode()
    assert 'id="review-form"' in screen and "Écoutez encore." in screen
    assert client.post(started.url, {"rating": "0"}).status_code == 302
    assert Review.objects.get(item=dispute, reviewer=ana).passed is False
