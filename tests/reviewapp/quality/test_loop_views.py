"""Planner, coverage and edge-case tag views: full page, htmx fragment, forbidden, and their writes;
the selectors behind them at a fixed number of queries."""

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.urls import reverse

from reviewapp.models import Conversation, Dataset, EdgeCase, EdgeCaseTag, Judge, ReviewItem, Role, Turn
from reviewapp.quality.selectors.coverage import coverage_matrix
from reviewapp.triage.selectors.planner import plan_cells
from tests import factories

pytestmark = pytest.mark.django_db
EXAMPLE = Path(__file__).resolve().parents[3] / "../shared/data/rubric-generator/order-status.json"


@pytest.fixture
def lead(make_user):
    return make_user("lea", role=Role.LEAD)


@pytest.fixture
def rubric():
    if not EXAMPLE.exists():
        pytest.skip("example missing")
    call_command("load_judges", str(EXAMPLE), "--slug", "order-status", stdout=StringIO())
    judge = Judge.objects.get(slug="order-status")
    dataset = Dataset.objects.create(name="orders")
    conversation = Conversation.objects.create(dataset=dataset, external_id="o1", language="en")
    Turn.objects.create(conversation=conversation, position=0, role="user", text="Where is my order?")
    Turn.objects.create(conversation=conversation, position=1, role="agent", text="Which order number?")
    return judge, conversation


def test_plan_page_and_apply(client, lead, make_user):
    judge = factories.binary_judge()
    v1 = factories.version(judge, "v1")
    turns = factories.agent_turns("calls", 5)
    factories.verdicts(factories.sweep_for(turns), v1, turns, [True] * 5)
    item = factories.item(judge, turns[0], status=ReviewItem.Status.OPEN)
    url = reverse("plan_page", args=[judge.slug])
    client.force_login(make_user("ana", languages=["fr"]))
    assert client.get(url).status_code == 403
    assert client.post(reverse("plan_apply", args=[judge.slug]), {"version": v1.pk, "budget": 10}).status_code == 403
    client.force_login(lead)
    page = client.get(url + "?budget=10").content.decode()
    assert "insufficient evidence" in page and "Make the queue follow this plan" in page
    fragment = client.get(url, headers={"HX-Request": "true"})
    assert b"<html" not in fragment.content and b'id="plan"' in fragment.content
    response = client.post(reverse("plan_apply", args=[judge.slug]), {"version": v1.pk, "budget": 10})
    assert response.status_code == 302 and "applied=1" in response.url
    item.refresh_from_db()
    assert item.plan_term == 49 and item.priority == 49


def test_coverage_page_and_rule(client, lead, rubric, make_user):
    judge, conversation = rubric
    url = reverse("coverage_page", args=[judge.slug])
    case = EdgeCase.objects.get(judge=judge, position=4)
    client.force_login(make_user("ana", languages=["en"]))
    assert client.get(url).status_code == 403
    client.force_login(lead)
    page = client.get(url).content.decode()
    assert page.count('class="rule-form"') == 8
    assert "User asks &#x27;Where is my order?&#x27; without providing an order ID" in page
    rule = reverse("edge_case_rule", args=[judge.slug, case.pk])
    bad = client.post(rule, {"pattern": "("})
    assert bad.status_code == 400 and "not a regular expression" in bad.content.decode()
    assert client.post(rule, {"pattern": r"where is my order"}).status_code == 302
    assert EdgeCaseTag.objects.get(edge_case=case).conversation == conversation
    assert "1 conversation tagged" in client.get(url).content.decode()


def test_conversation_edge_case_fragment_tags_by_hand(client, lead, rubric, make_user):
    judge, conversation = rubric
    url = reverse("conversation_edge_cases", args=[conversation.pk])
    case = EdgeCase.objects.get(judge=judge, position=1)
    outsider = make_user("yuki", languages=["ja"])
    client.force_login(outsider)
    assert client.get(url).status_code == 403
    reviewer = make_user("ana", languages=["en"])
    client.force_login(reviewer)
    assert client.get(url, headers={"HX-Request": "true"}).status_code == 200
    assert client.post(url, {"edge_case": case.pk, "action": "tag"}).status_code == 403
    client.force_login(lead)
    response = client.post(url, {"edge_case": case.pk, "action": "tag"}, headers={"HX-Request": "true"})
    assert response.status_code == 200 and b"<html" not in response.content
    assert "Tagged by hand by lea" in response.content.decode()
    assert EdgeCaseTag.objects.get(edge_case=case).source == EdgeCaseTag.Source.HAND
    full = client.get(url)
    assert b"<html" in full.content
    client.post(url, {"edge_case": case.pk, "action": "untag"})
    assert not EdgeCaseTag.objects.exists()
    detail = client.get(reverse("conversation_detail", args=[conversation.pk])).content.decode()
    assert f'hx-get="{url}"' in detail and f'href="{url}"' in detail


def test_selectors_read_in_a_fixed_number_of_queries(django_assert_num_queries, rubric):
    judge, conversation = rubric
    for case in EdgeCase.objects.filter(judge=judge):
        EdgeCaseTag.objects.create(edge_case=case, conversation=conversation, source="hand")
    with django_assert_num_queries(7):
        coverage_matrix(judge=judge)
    version = judge.versions.get()
    with django_assert_num_queries(3):
        plan_cells(version=version)
