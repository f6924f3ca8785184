"""A lead edits a signature in the browser: a refused change shows its error in place, an accepted one
becomes a new version in the history, and switching it off is recorded too."""

import re

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from reviewapp.judging.services.signatures import signature_create
from reviewapp.models import Conversation, Dataset, GoldLabel, Judge, Role, Signature, Turn

PASSWORD = "correct-horse-battery-7"


@pytest.fixture
def signature():
    judge = Judge.objects.create(slug="speakability", scale="binary")
    dataset = Dataset.objects.create(name="calls-fr")
    conversation = Conversation.objects.create(dataset=dataset, external_id="c1", language="fr")
    greeting = Turn.objects.create(
        conversation=conversation, position=0, role="agent", text="Bonjour, Air Horizon, Camille à l'appareil."
    )
    GoldLabel.objects.create(judge=judge, conversation=conversation, turn=greeting, source="imported", passed=True)
    return signature_create(
        judge=judge,
        language="fr",
        intent="greeting",
        kind="substring",
        pattern="à l'appareil",
        passed=True,
        evidence=[greeting],
    )


def test_lead_edits_then_switches_off_a_signature(page, login, make_user, signature):
    make_user("lea", role=Role.LEAD, password=PASSWORD)
    login(page, "lea", PASSWORD)
    detail = reverse("signature_detail", args=[signature.pk])
    page.goto(detail)
    expect(page.get_by_role("heading", name="History")).to_be_visible()
    with page.expect_navigation():
        page.get_by_role("link", name="Edit").click()

    # A wider pattern without new evidence is refused; the error appears in the form, in place.
    page.get_by_label("Pattern").fill("Bonjour")
    page.get_by_role("button", name=re.compile("Save version 2")).click()
    expect(page.get_by_role("alert")).to_contain_text("give at least one new evidence turn")
    expect(page).to_have_url(re.compile(re.escape(reverse("signature_edit", args=[signature.pk])) + "$"))

    # Narrowing it (a guard) needs no evidence: saved, and the browser lands on the signature's page.
    page.get_by_label("Pattern").fill("à l'appareil")
    page.get_by_label("Negation guards").fill("pas à l'appareil")
    page.get_by_label("Note").fill("guard against 'pas à l'appareil'")
    page.get_by_role("button", name=re.compile("Save version 2")).click()
    expect(page).to_have_url(re.compile(re.escape(detail) + "$"))
    history = page.locator("#signature-history")
    expect(history).to_contain_text("Edited")
    expect(history).to_contain_text("guard against")

    page.get_by_label("Why switch it off").fill("checking a false match")
    page.get_by_role("button", name="Switch off").click()
    expect(page).to_have_url(re.compile(re.escape(detail) + "$"))
    expect(page.locator("#signature-history")).to_contain_text("Switched off")
    expect(page.get_by_role("button", name="Switch on")).to_be_visible()
    signature.refresh_from_db()
    assert (signature.active, signature.version) == (False, 3)
    assert not Signature.objects.filter(active=True).exists()


def test_lead_creates_a_signature_errors_in_place_then_lands_on_its_page(page, login, make_user, signature):
    make_user("lea", role=Role.LEAD, password=PASSWORD)
    login(page, "lea", PASSWORD)
    greeting = signature.evidence.get()
    page.goto(reverse("signature_create"))
    page.get_by_label("Judge").select_option("speakability")
    page.get_by_label("Language").select_option("fr")
    page.get_by_label("Intent").fill("greeting")
    page.get_by_label("Kind").select_option("substring")
    page.get_by_label("Pattern").fill("Air Horizon")
    page.get_by_label("Passed").select_option("true")
    page.get_by_label("Evidence").fill("99999")
    page.get_by_role("button", name="Create signature").click()
    expect(page.get_by_role("alert")).to_contain_text("No turn with id 99999")
    expect(page).to_have_url(re.compile(re.escape(reverse("signature_create")) + "$"))

    page.get_by_label("Evidence").fill(str(greeting.pk))
    page.get_by_role("button", name="Create signature").click()
    created = Signature.objects.exclude(pk=signature.pk)
    expect(page).to_have_url(re.compile(r"/signatures/\d+/$"))
    assert created.count() == 1
    expect(page.get_by_role("heading", name="History")).to_be_visible()
