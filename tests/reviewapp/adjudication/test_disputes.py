"""Disputes: the list and the item page (full page, htmx fragment, forbidden), deciding, sending back, audit."""

import re

import pytest
from django.urls import reverse

from reviewapp.adjudication.services import adjudication as service
from reviewapp.models import Adjudication, AuditEvent, Comment, GoldLabel, ReviewItem, Role
from tests import factories
from tests.factories import HTMX

pytestmark = pytest.mark.django_db


def no_inline_style_or_script(html: str) -> None:
    assert not re.search(r"\sstyle=", html)
    assert "<script>" not in html


@pytest.fixture
def lead(make_user):
    return make_user("lea", role=Role.LEAD)


@pytest.fixture
def dispute(make_user):
    """A French turn: the judge says fail, one reviewer says pass, another says fail."""
    ana, bea = make_user("ana", languages=["fr"]), make_user("bea", languages=["fr"])
    item = factories.disputed_item(ana, bea)
    Comment.objects.create(turn=item.turn, author=ana, judge=item.judge, body="Reads fine to me <b>really</b>.")
    return item


def test_list_full_page_fragment_and_forbidden(client, lead, dispute, make_user):
    client.force_login(lead)
    html = client.get(reverse("dispute_list")).content.decode()
    assert f"#{dispute.pk}<" in html
    assert "Reviewer vs reviewer" in html and "Reviewer vs judge" in html
    no_inline_style_or_script(html)

    fragment = client.get(reverse("dispute_list"), {"kind": "judge_vs_judge"}, **HTMX).content.decode()
    assert fragment.lstrip().startswith('<section id="dispute-results"') and "<html" not in fragment
    assert f"#{dispute.pk}<" in fragment
    fragment = client.get(reverse("dispute_list"), {"kind": "run_vs_run"}, **HTMX).content.decode()
    assert f"#{dispute.pk}<" not in fragment and "0 items awaiting" in fragment

    client.force_login(make_user("rob", languages=["fr"]))
    assert client.get(reverse("dispute_list")).status_code == 403


def test_detail_shows_verdicts_reviews_and_comments_side_by_side(client, lead, dispute, make_user):
    client.force_login(lead)
    url = reverse("dispute_detail", args=[dispute.pk])
    html = client.get(url).content.decode()
    for text in ("Judge verdicts", "Reviews", "Comments", "ana", "bea", "Gloss", "Glossed."):
        assert text in html
    assert "&lt;b&gt;really&lt;/b&gt;" in html  # comment text is escaped
    no_inline_style_or_script(html)

    fragment = client.get(url, **HTMX).content.decode()
    assert fragment.lstrip().startswith('<article id="dispute"') and "<html" not in fragment

    client.force_login(make_user("rob", languages=["fr"]))
    assert client.get(url).status_code == 403
    assert client.post(reverse("dispute_decide", args=[dispute.pk]), {}).status_code == 403
    assert client.post(reverse("dispute_send_back", args=[dispute.pk]), {"note": "x"}).status_code == 403


def test_deciding_writes_gold_closes_the_item_and_is_audited(client, lead, dispute):
    client.force_login(lead)
    response = client.post(
        reverse("dispute_decide", args=[dispute.pk]),
        {"outcome": "fail", "categories": ["gloss"], "rationale": "The parenthesis is read aloud."},
    )
    assert response.status_code == 302
    dispute.refresh_from_db()
    assert dispute.status == ReviewItem.Status.CLOSED
    adjudication = Adjudication.objects.get(item=dispute)
    assert adjudication.passed is False and adjudication.lead == lead
    gold = GoldLabel.objects.get(turn=dispute.turn, source=GoldLabel.Source.ADJUDICATED)
    assert gold.passed is False and gold.failure_modes == ["gloss"]
    assert dispute.reviews.count() == 2
    actions = set(AuditEvent.objects.values_list("action", flat=True))
    assert {"adjudication.decide", "gold.adjudicated", "item.close"} <= actions

    # Revising keeps one adjudication and one gold label, and records before and after.
    client.post(
        reverse("dispute_decide", args=[dispute.pk]),
        {"outcome": "pass", "rationale": "Brand name, not a gloss."},
    )
    assert Adjudication.objects.count() == 1
    assert GoldLabel.objects.get(source=GoldLabel.Source.ADJUDICATED).passed is True
    revise = AuditEvent.objects.get(action="adjudication.revise")
    assert revise.before["passed"] is False and revise.after["passed"] is True
    assert revise.actor == lead

    html = client.get(reverse("dispute_detail", args=[dispute.pk])).content.decode()
    assert "adjudication.revise" in html and "adjudication.decide" in html and "lea" in html
    assert "Brand name, not a gloss." in html


def test_sending_back_reopens_with_the_note_and_keeps_reviews(client, lead, dispute):
    client.force_login(lead)
    response = client.post(reverse("dispute_send_back", args=[dispute.pk]), {"note": "Listen to the audio first."})
    assert response.status_code == 302
    dispute.refresh_from_db()
    assert dispute.status == ReviewItem.Status.OPEN and dispute.lead_note == "Listen to the audio first."
    assert dispute.reviews.count() == 2
    event = AuditEvent.objects.get(action="item.send_back")
    assert event.before["status"] == "awaiting_adjudication" and event.after["status"] == "open"
    # An open item can be neither decided nor sent back again.
    response = client.post(reverse("dispute_decide", args=[dispute.pk]), {"outcome": "fail", "rationale": "x"})
    assert response.status_code == 400 and "only items awaiting adjudication" in response.content.decode()
    assert not Adjudication.objects.exists()


def test_invalid_decisions_are_refused(lead, dispute, make_user):
    with pytest.raises(service.AdjudicationError, match="rationale"):
        service.adjudication_decide(item=dispute, lead=lead, passed=False, rationale="  ")
    with pytest.raises(service.AdjudicationError, match="final label"):
        service.adjudication_decide(item=dispute, lead=lead, rationale="why")
    with pytest.raises(service.AdjudicationError, match="outside"):
        service.adjudication_decide(item=dispute, lead=lead, rating=7, rationale="why")
    with pytest.raises(service.AdjudicationError, match="Only leads"):
        service.adjudication_decide(item=dispute, lead=make_user("rob"), passed=True, rationale="why")
    with pytest.raises(service.AdjudicationError, match="Say what"):
        service.item_send_back(item=dispute, lead=lead, note="")
    assert not AuditEvent.objects.exists()


def test_form_errors_are_shown(client, lead, dispute):
    client.force_login(lead)
    response = client.post(reverse("dispute_decide", args=[dispute.pk]), {"outcome": "fail", "rationale": ""})
    assert response.status_code == 400
    assert "field__error" in response.content.decode()


def _more_disputes(make_user, count: int, start: int) -> None:
    judge = factories.binary_judge()
    turns = factories.agent_turns(f"more{start}", count)
    factories.verdicts(factories.sweep_for(turns), factories.version(judge, "v1"), turns, [True] * count)
    for index, turn in enumerate(turns):
        item = factories.item(judge, turn)
        for r in range(3):
            factories.review(
                item, make_user(f"r{start}-{index}-{r}"), passed=bool(r % 2), categories=[factories.category("gloss")]
            )
        Comment.objects.create(turn=turn, author=make_user(f"c{start}-{index}"), body="Hmm.")


def test_pages_run_a_fixed_number_of_queries(client, lead, dispute, make_user, django_assert_max_num_queries):
    client.force_login(lead)
    for size in (1, 8):
        _more_disputes(make_user, size, start=size)
        with django_assert_max_num_queries(8):
            assert client.get(reverse("dispute_list")).status_code == 200
        item = ReviewItem.objects.order_by("-pk").first()
        service.adjudication_decide(item=item, lead=lead, passed=True, rationale="ok")
        # 18, +3: who could take the item if it were sent back, shown beside the send-back choices,
        # +1: one read of the judge's versions for its failure modes
        with django_assert_max_num_queries(22):
            assert client.get(reverse("dispute_detail", args=[item.pk])).status_code == 200
