"""A lead resolves a dispute in the browser, and the item's history records who decided what."""

import re

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from reviewapp.models import Adjudication, AuditEvent, GoldLabel, ReviewItem, Role
from tests import factories

PASSWORD = "correct-horse-battery-7"


@pytest.fixture
def dispute(make_user):
    return factories.disputed_item(make_user("ana", languages=["fr"]), make_user("bea", languages=["fr"]))


def test_lead_decides_a_dispute_and_the_history_records_it(page, login, make_user, dispute, dialogs):
    make_user("lea", role=Role.LEAD, password=PASSWORD)
    login(page, "lea", PASSWORD)

    page.goto(reverse("dispute_list"))
    expect(page.get_by_role("heading", level=1)).to_have_text("Disputes")
    with page.expect_navigation():
        page.get_by_role("link", name=f"#{dispute.pk}").click()
    expect(page.get_by_text("Reviewer vs reviewer").first).to_be_visible()
    expect(page.get_by_role("heading", name="History")).to_be_visible()
    expect(page.get_by_text("No change recorded yet.")).to_be_visible()

    page.get_by_label("fail").check()
    page.get_by_label("Gloss").check()
    page.get_by_label("Rationale").fill("The English term in parentheses is read aloud.")
    with page.expect_navigation():
        page.get_by_role("button", name="Decide and close").click()

    expect(page.get_by_role("heading", level=1)).to_contain_text("Closed")
    history = page.locator(".history")
    expect(history).to_contain_text("adjudication.decide")
    expect(history).to_contain_text("gold.adjudicated")
    expect(history).to_contain_text("item.close")
    expect(history.locator(".history__event").first).to_contain_text("lea")
    expect(page.get_by_text("Adjudicated by a lead")).to_be_visible()
    expect(page.get_by_role("button", name="Save the revised decision")).to_be_visible()

    assert ReviewItem.objects.get(pk=dispute.pk).status == ReviewItem.Status.CLOSED
    assert Adjudication.objects.get(item=dispute).rationale.startswith("The English term")
    assert GoldLabel.objects.get(source=GoldLabel.Source.ADJUDICATED).failure_modes == ["gloss"]
    assert AuditEvent.objects.filter(actor__username="lea").count() == 3
    assert dialogs == []


def test_lead_sends_an_item_back_with_a_note(page, login, make_user, dispute):
    make_user("lea", role=Role.LEAD, password=PASSWORD)
    login(page, "lea", PASSWORD)
    page.goto(reverse("dispute_detail", args=[dispute.pk]))
    page.get_by_label("Note to reviewers").fill("Listen to the audio before labelling.")
    with page.expect_navigation():
        page.get_by_role("button", name="Send back").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("Open")
    expect(page.get_by_text("Listen to the audio before labelling.").first).to_be_visible()
    expect(page.locator(".history")).to_contain_text("item.send_back")
    expect(page).to_have_url(re.compile(rf"/disputes/{dispute.pk}/$"))
