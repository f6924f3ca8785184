"""A lead makes the queue follow the label plan, and tags a rubric's edge case by pattern and by hand."""

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse
from playwright.sync_api import expect

from reviewapp.models import Conversation, Dataset, EdgeCaseTag, ReviewItem, Role, Turn
from tests import factories

PASSWORD = "correct-horse-battery-7"
EXAMPLE = Path(__file__).resolve().parents[2] / "../shared/data/rubric-generator/order-status.json"


@pytest.fixture
def lead(make_user):
    return make_user("lea", role=Role.LEAD, password=PASSWORD)


def test_lead_applies_the_label_plan_to_the_queue(page, login, lead):
    judge = factories.binary_judge()
    v1 = factories.version(judge, "v1")
    fr = factories.agent_turns("calls-fr", 40, language="fr")
    ja = factories.agent_turns("calls-ja", 40, language="ja")
    factories.verdicts(factories.sweep_for(fr), v1, fr, [True] * 40)
    factories.verdicts(factories.sweep_for(ja), v1, ja, [True] * 40)
    factories.gold(judge, fr[:40], [True] * 38 + [False] * 2)
    items = [factories.item(judge, t, status=ReviewItem.Status.OPEN) for t in (fr[39], ja[39])]
    login(page, "lea", PASSWORD)
    page.goto(reverse("plan_page", args=[judge.slug]))
    rows = page.locator("#plan-cells tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.filter(has_text="ja")).to_contain_text("insufficient evidence")
    expect(rows.filter(has_text="fr")).not_to_contain_text("insufficient evidence")
    page.get_by_label("Review budget (labels)").fill("40")
    page.get_by_role("button", name="Plan", exact=True).click()
    expect(page.locator("#plan-cells")).to_be_visible()
    # The plan comes back through htmx (the budget's change and the submit): wait until the plan for 40
    # labels is in and no request is still in flight, or the swap can replace the form being submitted.
    expect(page.locator("#plan input[name=budget]")).to_have_value("40")
    expect(page.locator(".htmx-request")).to_have_count(0)
    with page.expect_navigation():
        page.get_by_role("button", name="Make the queue follow this plan").click()
    expect(page.get_by_text("The queue now follows this allocation")).to_be_visible()
    fr_item, ja_item = (ReviewItem.objects.get(pk=i.pk) for i in items)
    assert ja_item.priority > fr_item.priority


def test_lead_tags_edge_cases_by_pattern_and_by_hand(page, login, lead):
    if not EXAMPLE.exists():
        pytest.skip("example missing")
    call_command("load_judges", str(EXAMPLE), "--slug", "order-status", stdout=StringIO())
    dataset = Dataset.objects.create(name="orders")
    conversation = Conversation.objects.create(dataset=dataset, external_id="o1", language="en")
    Turn.objects.create(conversation=conversation, position=0, role="user", text="Where is my order?")
    Turn.objects.create(conversation=conversation, position=1, role="agent", text="Which order number?")
    login(page, "lea", PASSWORD)
    page.goto(reverse("quality_judge", args=["order-status"]))
    with page.expect_navigation():
        page.get_by_role("link", name="Edge-case coverage").click()
    matrix = page.locator("#coverage-matrix tbody tr")
    expect(matrix).to_have_count(8)
    row = matrix.nth(3)
    row.get_by_label("Tag by pattern").fill("where is my order")
    with page.expect_navigation():
        row.get_by_role("button", name="Tag").click()
    expect(page.locator("#coverage-matrix tbody tr").nth(3)).to_contain_text("1 conversation tagged")

    page.goto(reverse("conversation_detail", args=[conversation.pk]))
    tags = page.locator("#edge-case-tags")
    expect(tags).to_contain_text("Matched the case's pattern")
    page.get_by_label("Edge case", exact=True).select_option(index=0)
    tags.get_by_role("button", name="Tag", exact=True).click()
    expect(page.locator("#edge-case-tags")).to_contain_text("Tagged by hand by lea")
    assert EdgeCaseTag.objects.filter(source=EdgeCaseTag.Source.HAND).count() == 1
