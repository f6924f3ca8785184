"""A lead reads a judge's quality on a slice in the browser: the filters swap the report in place, the
address follows, and the triage button on the dataset page queues the QA sample."""

import re

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from reviewapp.models import ReviewItem, Role
from tests.reviewapp import quality_data as data

PASSWORD = "correct-horse-battery-7"
GOLD = [True, True, False, True, False, False, True, True, False, True, True, False]
JUDGE = [True, False, False, True, True, False, True, True, False, True, None, False]


@pytest.fixture
def scored(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    judge = data.binary_judge()
    turns = data.agent_turns("calls", len(GOLD))
    data.verdicts(data.sweep_for(turns), data.version(judge, "v1"), turns, JUDGE)
    data.gold(judge, turns, GOLD)
    return turns[0].conversation.dataset


def test_lead_slices_the_quality_report_and_queues_a_qa_sample(page, login, make_user, scored):
    make_user("lea", role=Role.LEAD, password=PASSWORD)
    login(page, "lea", PASSWORD)

    page.goto(reverse("quality_judge", args=["speakability"]))
    report = page.locator("#quality-report")
    expect(report).to_contain_text("unresolved left out")
    expect(page.locator("#conventions")).to_contain_text("unresolved counted wrong")
    expect(report).to_contain_text("Insufficient evidence")
    expect(page.locator("#slice")).to_contain_text("Unresolved answers left out")

    page.get_by_label("Unresolved answers").select_option("wrong")
    expect(page.locator("#slice")).to_contain_text("counted wrong in a fixed denominator")
    expect(page).to_have_url(re.compile(r"unresolved=wrong"))

    page.get_by_role("textbox", name="Language").fill("de")
    page.get_by_role("textbox", name="Language").press("Enter")
    expect(page.locator("#slice")).to_contain_text("language de")
    expect(page.locator("#estimates")).to_be_visible()

    page.goto(reverse("dataset_detail", args=[scored.pk]))
    page.get_by_label("QA sample rate").fill("0.5")
    page.get_by_role("button", name="Queue what needs people").click()
    result = page.locator("#triage-result")
    expect(result).to_contain_text("items queued")
    expect(result.locator("#triage-qa")).to_contain_text("speakability")
    assert sum("qa_sample" in item.reasons for item in ReviewItem.objects.all()) == 6
