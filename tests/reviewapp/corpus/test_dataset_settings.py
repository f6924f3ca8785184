"""The dataset review settings page (blind mode and k), blind by default, and the QA sample's blindness."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from reviewapp.models import AuditEvent, Dataset, Review, ReviewItem, Role
from reviewapp.review.services import reviews
from reviewapp.triage.services import claims
from tests.factories import HTMX, dataset, make_item

pytestmark = pytest.mark.django_db


def test_new_datasets_are_blind_by_default():
    assert Dataset.objects.create(name="fresh").blind_review is True


def test_lead_sees_the_settings_page_and_its_fragment(client, make_user):
    data = dataset("calls", blind_review=False, reviews_required=1)
    client.force_login(make_user("lea", role=Role.LEAD))
    url = reverse("dataset_settings", args=[data.pk])

    page = client.get(url)
    fragment = client.get(url, **HTMX)

    assert page.status_code == 200 and "<html" in page.content.decode()
    assert 'name="blind_review"' in page.content.decode() and 'value="1"' in page.content.decode()
    html = fragment.content.decode()
    assert fragment.status_code == 200 and "<html" not in html and 'id="dataset-settings-form"' in html
    assert (
        reverse("dataset_settings", args=[data.pk])
        in client.get(reverse("dataset_detail", args=[data.pk])).content.decode()
    )


def test_reviewers_may_not_open_or_post_the_settings(client, make_user):
    data = dataset("calls", blind_review=False)
    make_item("fr", on=data)
    client.force_login(make_user("ana", languages=["fr"]))
    url = reverse("dataset_settings", args=[data.pk])
    assert client.get(url).status_code == 403
    assert client.post(url, {"blind_review": "on", "reviews_required": "3"}).status_code == 403
    data.refresh_from_db()
    assert data.blind_review is False and data.reviews_required == 1
    assert "dataset-settings-link" not in client.get(reverse("dataset_detail", args=[data.pk])).content.decode()


def test_htmx_save_redirects_audits_and_gives_waiting_items_the_new_k(client, make_user):
    data = dataset("calls", blind_review=False, reviews_required=1)
    untouched = make_item("fr", on=data)
    qa = make_item("fr", on=data, reasons=["qa_sample"], reviews_required=2)
    started = make_item("fr", on=data, reviews_required=1, priority=999)
    lea = make_user("lea", role=Role.LEAD)
    ana = make_user("ana", languages=["fr"])
    claims.item_claim(user=ana, item=started)
    Review.objects.create(item=started, reviewer=ana, rating=2)
    client.force_login(lea)

    response = client.post(
        reverse("dataset_settings", args=[data.pk]), {"blind_review": "on", "reviews_required": "3"}, **HTMX
    )

    assert response.status_code == 200
    assert response["HX-Redirect"] == reverse("dataset_detail", args=[data.pk]) + "?saved=1"
    data.refresh_from_db()
    assert data.blind_review is True and data.reviews_required == 3
    assert ReviewItem.objects.get(pk=untouched.pk).reviews_required == 3
    assert ReviewItem.objects.get(pk=qa.pk).reviews_required == 3
    assert ReviewItem.objects.get(pk=started.pk).reviews_required == 1  # already under review: keeps its k
    event = AuditEvent.objects.get(action="dataset.settings")
    assert event.actor == lea and event.object_id == str(data.pk)
    assert event.before == {"blind_review": False, "reviews_required": 1}
    assert event.after == {"blind_review": True, "reviews_required": 3, "items_updated": 2}

    plain = client.post(reverse("dataset_settings", args=[data.pk]), {"reviews_required": "2"})
    assert plain.status_code == 302 and plain.url.startswith(reverse("dataset_detail", args=[data.pk]))
    assert Dataset.objects.get(pk=data.pk).blind_review is False


def test_invalid_k_shows_its_error_in_the_form_and_writes_nothing(client, make_user):
    data = dataset("calls", blind_review=False, reviews_required=1)
    client.force_login(make_user("lea", role=Role.LEAD))
    response = client.post(reverse("dataset_settings", args=[data.pk]), {"reviews_required": "0"}, **HTMX)
    html = response.content.decode()
    assert response.status_code == 400 and "<html" not in html
    assert 'id="dataset-settings-form"' in html and 'class="field__error"' in html
    assert "greater than or equal to 1" in html
    assert not AuditEvent.objects.filter(action="dataset.settings").exists()
    assert Dataset.objects.get(pk=data.pk).reviews_required == 1


def test_the_settings_form_needs_its_csrf_token(make_user):
    data = dataset("calls", blind_review=False)
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(make_user("lea", role=Role.LEAD))
    assert strict.post(reverse("dataset_settings", args=[data.pk]), {"reviews_required": "2"}).status_code == 403
    assert 'name="csrfmiddlewaretoken"' in strict.get(reverse("dataset_settings", args=[data.pk])).content.decode()


def test_the_second_reviewer_of_a_qa_item_sees_nothing_of_the_first_in_a_non_blind_dataset(client, make_user):
    item = make_item("fr", on=dataset("open", blind_review=False), reasons=["qa_sample"], reviews_required=2)
    first = make_user("first-reviewer-zx", languages=["fr"])
    second = make_user("second", languages=["fr"])
    claims.item_claim(user=first, item=item)
    reviews.review_submit(item=item, user=first, rating=1, comment="LABEL-NOTE-q9 trop long")
    client.force_login(second)
    claims.item_claim(user=second, item=item)

    before = client.get(reverse("review_item", args=[item.pk])).content.decode()
    verdicts = client.get(reverse("review_verdicts", args=[item.pk]), **HTMX).content.decode()
    thread = client.get(reverse("turn_comments", args=[item.turn_id])).content.decode()
    conversation = client.get(reverse("conversation_detail", args=[item.conversation_id])).content.decode()
    for html in (before, verdicts, thread, conversation):
        assert "first-reviewer-zx" not in html and "LABEL-NOTE-q9" not in html
        assert "Un peu long pour l" not in html  # the verdict's explanation

    client.post(reverse("review_item", args=[item.pk]), {"rating": "2"})
    after = client.get(reverse("review_item", args=[item.pk])).content.decode()
    assert "first-reviewer-zx" in after and "Un peu long pour l" in after
