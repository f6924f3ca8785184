"""A lead drafts a new judge version from adjudicated disagreements in two languages, edits and saves it,
starts the proof, and reads the comparison against the noise baseline with the example items excluded."""

import re

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from reviewapp.models import JudgeVersion, Role, VersionProvenance
from tests import fake_llms, scenarios

PASSWORD = "correct-horse-battery-7"


@pytest.fixture
def corpus(make_user, monkeypatch, eager_celery):
    monkeypatch.setattr("reviewapp.judging.services.sweeps.llm_client", lambda: fake_llms.CorrectionAwareLLM())
    lead = make_user("lea", role=Role.LEAD, password=PASSWORD)
    reviewers = [make_user("ana", languages=["fr", "ja"]), make_user("bea", languages=["fr", "ja"])]
    return scenarios.draft_corpus(lead, reviewers)


def test_lead_drafts_saves_and_proves_a_version_from_corrections(page, login, corpus, dialogs):
    judge = corpus.v1.judge
    login(page, "lea", PASSWORD)
    page.goto(reverse("quality_judge", args=[judge.slug]))
    with page.expect_navigation():
        page.get_by_role("link", name="New version from corrections").click()

    expect(page.get_by_role("heading", level=1)).to_contain_text("from corrections")
    expect(page.locator("#draft-summary")).to_contain_text("5 disagreements in 2 languages")
    expect(page.locator("#evidence-fr tbody tr")).to_have_count(3)
    expect(page.locator("#evidence-ja tbody tr")).to_have_count(2)
    expect(page.locator(".udiff__add").filter(has_text="## Reviewer corrections (fr)")).to_have_count(1)

    fr = page.get_by_label("Guidance for fr")
    expect(fr).to_have_value(re.compile(r"- gloss \(3\): "))
    fr.fill(fr.input_value() + "\nA word followed by its English translation in brackets is a gloss: rate 0.")
    page.get_by_label("New version label").fill("1.1-glosses")
    with page.expect_navigation():
        page.get_by_role("button", name="Save as a new version").click()

    expect(page.get_by_role("heading", level=1)).to_contain_text("1.1-glosses")
    expect(page.locator("#excluded-count")).to_contain_text("5 targets excluded")
    expect(page.locator(".udiff__add").filter(has_text="rate 0.")).to_have_count(1)
    v2 = JudgeVersion.objects.get(judge=judge, version="1.1-glosses")
    assert VersionProvenance.objects.get(version=v2).approved_by.username == "lea"

    with page.expect_navigation():
        page.get_by_role("button", name="Start the proof").click()
    expect(page.get_by_role("heading", level=1)).to_contain_text("1.0 against 1.1-glosses")
    statement = page.locator("#noise-statement")
    expect(statement).to_contain_text("1.1-glosses moves more than noise")
    expect(page.locator("#proof-excluded")).to_contain_text("5 gold-labelled targets excluded")
    expect(page.locator("#proof-excluded")).to_contain_text("16 held-out targets compared")
    rows = page.locator("#proof-by-language tbody tr")
    expect(rows).to_have_count(3)
    expect(rows.filter(has_text="fr")).to_contain_text("insufficient evidence")
    expect(page.locator("#proof-moved tbody tr")).to_have_count(8)
    expect(page.get_by_role("heading", name="Gate")).to_be_visible()

    page.goto(reverse("version_list", args=[judge.slug]))
    row = page.locator("#version-list tbody tr").filter(has_text="1.1-glosses")
    expect(row).to_contain_text("1.0")
    expect(row).to_contain_text("5 items, 1 comment, 5 excluded from gold")
    assert dialogs == []
