"""A lead reads a judge's quality on a slice in the browser: the filters swap the report in place, the
address follows, and the triage button on the dataset page queues the QA sample."""

import re

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from reviewapp.models import ReviewItem, Role
from tests import factories

PASSWORD = "correct-horse-battery-7"
GOLD = [True, True, False, True, False, False, True, True, False, True, True, False]
JUDGE = [True, False, False, True, True, False, True, True, False, True, None, False]


@pytest.fixture
def scored():
    turns = factories.judged_turns(JUDGE)
    factories.gold(factories.binary_judge(), turns, GOLD)
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


def test_lead_compares_two_versions_of_an_ordinal_judge_and_narrows_the_slice(page, login, make_user):
    from reviewapp.models import Dataset, GoldLabel, Judge, JudgeVersion, Sweep, Verdict

    judge = Judge.objects.create(slug="brevity", scale=Judge.Scale.ORDINAL, scale_min=1, scale_max=3)
    a = JudgeVersion.objects.create(judge=judge, version="a", spec={}, spec_hash="b-a")
    b = JudgeVersion.objects.create(judge=judge, version="b", spec={}, spec_hash="b-b")
    for name, before, after in (("calls", [1, 2, 3, 2], [2, 3, 3, 1]), ("other", [1, 1], [3, 3])):
        turns = factories.agent_turns(name, len(before))
        sweep = Sweep.objects.create(kind=Sweep.Kind.IMPORT, dataset=Dataset.objects.get(name=name), status="done")
        for version, ratings in ((a, before), (b, after)):
            Verdict.objects.bulk_create(
                Verdict(sweep=sweep, judge_version=version, conversation=t.conversation, turn=t, tier="imported",
                        status="resolved", rating=r)
                for t, r in zip(turns, ratings, strict=True)
            )  # fmt: skip
        GoldLabel.objects.bulk_create(
            GoldLabel(judge=judge, conversation=t.conversation, turn=t, source="imported", rating=2) for t in turns
        )
    make_user("lea", role=Role.LEAD, password=PASSWORD)
    login(page, "lea", PASSWORD)
    page.goto(reverse("compare_versions", args=["brevity"]) + f"?a={a.pk}&b={b.pk}")
    directions = page.locator("#directions")
    expect(directions).to_contain_text("4 up / 1 down")
    page.get_by_label("Datasets").select_option("calls")
    expect(directions).to_contain_text("2 up / 1 down")
    expect(page).to_have_url(re.compile(r"dataset=calls"))
