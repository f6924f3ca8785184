"""Reviewer and lead flows of the access layer, in Chromium: a queue filtered by dataset keeps working,
blind review holds until the label is in, a lead sets blind mode and k, a lead acts on many items."""

from __future__ import annotations

import re

from django.urls import reverse
from playwright.sync_api import expect

from reviewapp.models import AuditEvent, Conversation, Dataset, Review, ReviewItem, ReviewSkip, Role
from tests.factories import dataset, dataset_of_languages, make_item

PASSWORD = "correct-horse-battery-7"


def test_reviewer_filters_by_dataset_then_submits_skips_and_goes_next(page, login, make_user, dialogs):
    calls, other = dataset("appels"), dataset("autres")
    first, second, third = (make_item("fr", on=calls, priority=p) for p in (300, 200, 100))
    elsewhere = make_item("fr", on=other, priority=999)
    ana = make_user("ana", languages=["fr"], password=PASSWORD)
    login(page, "ana", PASSWORD)
    expect(page).to_have_url(re.compile(re.escape(reverse("queue_index")) + "$"))

    with page.expect_response(lambda response: f"dataset={calls.pk}" in response.url):
        page.select_option("#queue-dataset", str(calls.pk))
    expect(page.locator(".results__count")).to_have_text("3 items")
    with page.expect_navigation():
        page.click("#start-reviewing")
    expect(page).to_have_url(re.compile(re.escape(reverse("review_item", args=[first.pk])) + "$"))

    page.locator("input[name=rating][value='2']").check()
    with page.expect_navigation():
        page.click("#review-form button[type=submit]")
    expect(page).to_have_url(re.compile(re.escape(reverse("review_item", args=[second.pk])) + "$"))
    expect(page.locator("body")).not_to_contain_text("Server Error")

    page.keyboard.press("s")
    expect(page.locator("#skip-reason")).to_be_focused()
    page.keyboard.type("Pas mon dialecte.")
    with page.expect_navigation():
        page.locator("#skip-dialog button[type=submit]").click()
    expect(page).to_have_url(re.compile(re.escape(reverse("review_item", args=[third.pk])) + "$"))

    assert Review.objects.filter(item=first, reviewer=ana).exists()
    assert ReviewSkip.objects.filter(item=second, reviewer=ana).exists()
    assert not ReviewItem.objects.filter(pk=elsewhere.pk, claimed_by=ana).exists()
    assert dialogs == []


def test_blind_review_shows_verdicts_only_after_the_label(page, login, make_user):
    item = make_item("fr", on=dataset("aveugle", blind_review=True), reviews_required=2)
    peer = make_user("peer-odile", languages=["fr"])
    Review.objects.create(item=item, reviewer=peer, rating=1, comment="PEER-NOTE")
    ReviewItem.objects.filter(pk=item.pk).update(status=ReviewItem.Status.IN_REVIEW)
    make_user("ana", languages=["fr"], password=PASSWORD)
    login(page, "ana", PASSWORD)

    for url in (reverse("conversation_detail", args=[item.conversation_id]),):
        page.goto(url)
        expect(page.locator("body")).not_to_contain_text("Un peu long pour l'oral")
        expect(page.locator(".blind-note").first).to_be_visible()
    page.goto(reverse("queue_index"))
    with page.expect_navigation():
        page.click("#start-reviewing")
    expect(page).to_have_url(re.compile(re.escape(reverse("review_item", args=[item.pk])) + "$"))
    expect(page.locator("#verdicts")).to_contain_text("Blind review")
    expect(page.locator("body")).not_to_contain_text("Un peu long pour l'oral")
    expect(page.locator("body")).not_to_contain_text("peer-odile")

    page.locator("input[name=rating][value='2']").check()
    with page.expect_navigation():
        page.click("#review-form button[type=submit]")
    expect(page).to_have_url(re.compile(re.escape(reverse("review_item", args=[item.pk])) + "$"))
    expect(page.locator("#verdicts")).to_contain_text("Un peu long pour l'oral")
    expect(page.locator("body")).to_contain_text("peer-odile")


def test_lead_changes_blind_mode_and_k_on_the_settings_page(page, login, make_user):
    data = dataset("réglages", blind_review=False, reviews_required=1)
    waiting = make_item("fr", on=data)
    make_user("lea", role=Role.LEAD, password=PASSWORD)
    login(page, "lea", PASSWORD)
    page.goto(reverse("dataset_detail", args=[data.pk]))
    with page.expect_navigation():
        page.click("#dataset-settings-link")

    # The browser would refuse 0 itself (min=1): take that away to see the server's answer in place.
    page.evaluate("document.querySelector('#id_reviews_required').removeAttribute('min')")
    page.fill("#id_reviews_required", "0")
    page.click("#dataset-settings-save")
    expect(page.locator("#dataset-settings-form .field__error")).to_be_visible()
    expect(page).to_have_url(re.compile(re.escape(reverse("dataset_settings", args=[data.pk])) + "$"))

    page.check("#id_blind_review")
    page.fill("#id_reviews_required", "3")
    with page.expect_navigation():
        page.click("#dataset-settings-save")
    expect(page).to_have_url(re.compile(re.escape(reverse("dataset_detail", args=[data.pk])) + r"\?saved=1$"))
    expect(page.locator(".facts")).to_contain_text("3")
    data.refresh_from_db()
    assert data.blind_review is True and data.reviews_required == 3
    assert ReviewItem.objects.get(pk=waiting.pk).reviews_required == 3
    assert AuditEvent.objects.filter(action="dataset.settings", object_id=str(data.pk)).count() == 1
    assert Dataset.objects.get(pk=data.pk).blind_review


def test_lead_closes_items_with_a_bulk_action(page, login, make_user):
    first, second, third = (make_item("fr", priority=p) for p in (3, 2, 1))
    make_user("lea", role=Role.LEAD, password=PASSWORD)
    login(page, "lea", PASSWORD)
    page.goto(reverse("queue_index"))

    page.select_option("#bulk-action", "reprioritise")
    page.check(f"#bulk-item-{third.pk}")
    page.click("#bulk-apply")
    expect(page.locator("#bulk-errors")).to_contain_text("Give a priority")

    page.select_option("#bulk-action", "close")
    page.check(f"#bulk-item-{first.pk}")
    page.check(f"#bulk-item-{second.pk}")
    with page.expect_navigation():
        page.click("#bulk-apply")
    expect(page.locator("#bulk-done")).to_have_text("Closed 2 items.")
    expect(page.locator(".results__count")).to_have_text("1 item")
    statuses = dict(ReviewItem.objects.values_list("pk", "status"))
    assert statuses == {first.pk: "closed", second.pk: "closed", third.pk: "open"}
    assert AuditEvent.objects.filter(action="item.bulk_close").count() == 2


def test_lead_sees_who_can_take_a_sent_back_item_and_sends_it_to_its_reviewers(page, login, make_user):
    item = make_item("fr", reviews_required=2)
    ana, bea = make_user("ana", languages=["fr"]), make_user("bea", languages=["fr"])
    Review.objects.create(item=item, reviewer=ana, rating=1)
    Review.objects.create(item=item, reviewer=bea, rating=3)
    ReviewItem.objects.filter(pk=item.pk).update(status=ReviewItem.Status.AWAITING_ADJUDICATION)
    make_user("lea", role=Role.LEAD, password=PASSWORD)
    login(page, "lea", PASSWORD)
    page.goto(reverse("dispute_detail", args=[item.pk]))

    expect(page.locator("[data-takers=original]")).to_have_text("can take it: ana, bea")
    expect(page.locator("[data-takers=any]")).to_contain_text("nobody can take it")
    page.fill("textarea[name=note]", "Écoutez la fin de la phrase.")
    page.check("input[name=to][value=any]")
    with page.expect_navigation():
        page.click("#sendback-title ~ form button[type=submit]")
    expect(page.locator("body")).to_contain_text("No reviewer of fr is left")
    assert ReviewItem.objects.get(pk=item.pk).status == ReviewItem.Status.AWAITING_ADJUDICATION

    page.fill("textarea[name=note]", "Écoutez la fin de la phrase.")
    page.check("input[name=to][value=original]")
    with page.expect_navigation():
        page.click("#sendback-title ~ form button[type=submit]")
    assert ReviewItem.objects.get(pk=item.pk).status == ReviewItem.Status.OPEN
    assert Review.objects.filter(item=item, revision_requested=True).count() == 2
    page.goto(reverse("queue_index"))
    expect(page.locator(f"#bulk-item-{item.pk}")).to_be_visible()
    expect(page.locator(".takers").first).to_contain_text("ana, bea can take it")


def test_reader_pages_through_a_dataset_and_back_without_losing_the_language(page, login, make_user):
    data = dataset_of_languages("pages", ["fr", "de"] * 60, turns_per_conversation=0)
    make_user("ana", languages=["fr", "de"], password=PASSWORD)
    ids = sorted(Conversation.objects.filter(dataset=data, language="fr").values_list("external_id", flat=True))
    login(page, "ana", PASSWORD)
    page.goto(reverse("dataset_detail", args=[data.pk]))
    expect(page.locator(".results__count")).to_contain_text("120 conversations")

    with page.expect_response(lambda response: "language=fr" in response.url):
        page.select_option("#conversation-language", "fr")
    expect(page.locator(".results__count")).to_contain_text("60 conversations")
    rows = page.locator("#conversation-results tbody tr")
    expect(rows).to_have_count(50)
    expect(rows.first).to_contain_text(ids[0])

    page.click("#conversation-results a[rel=next]")  # htmx swaps the list and pushes the address
    expect(rows).to_have_count(10)
    expect(rows.first).to_contain_text(ids[50])
    expect(page).to_have_url(re.compile(r"language=fr&after=" + re.escape(ids[49]) + "$"))
    expect(page.locator("#conversation-results a[rel=next]")).to_have_count(0)

    page.click("#conversation-results a[rel=prev]")
    expect(rows).to_have_count(50)
    expect(rows.first).to_contain_text(ids[0])
    expect(rows.last).to_contain_text(ids[49])
    expect(page.locator("body")).not_to_contain_text("Server Error")
