"""The label planner on stored verdicts and gold: cells, Wilson arithmetic, the command, and the queue
order following the allocation."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from statsmodels.stats.proportion import proportion_confint

from reviewapp.models import ReviewItem
from reviewapp.triage.selectors.planner import plan_cells
from reviewapp.triage.services.claims import item_claim
from reviewapp.triage.services.label_plan import PLAN_TERM_MAX, label_plan_apply
from scoring.planner import EVIDENCE_FLOOR
from tests import factories

pytestmark = pytest.mark.django_db


def needed_by_search(k: int, n: int, h: float) -> int:
    """Labels to add, at the current proportion k/n, until statsmodels' Wilson interval is within +-h."""
    p = k / n
    m = 1
    while True:
        low, high = proportion_confint(p * m, m, alpha=0.05, method="wilson")
        if (high - low) / 2 <= h:
            return max(0, m - n)
        m += 1


@pytest.fixture
def corpus():
    judge = factories.binary_judge()
    v1 = factories.version(judge, "v1")
    fr = factories.agent_turns("calls-fr", 60, language="fr")
    ja = factories.agent_turns("calls-ja", 60, language="ja")
    sweep = factories.sweep_for(fr)
    # fr: 40 gold labels, the judge right on 36; ja: 10 gold labels (below the floor), right on 5.
    factories.verdicts(sweep, v1, fr, [True] * 60)
    factories.verdicts(factories.sweep_for(ja), v1, ja, [True] * 60)
    factories.gold(judge, fr[:40], [True] * 36 + [False] * 4)
    factories.gold(judge, ja[:10], [True] * 5 + [False] * 5)
    return judge, v1, fr, ja


def test_cells_carry_wilson_intervals_and_labels_needed(corpus):
    _judge, v1, _fr, _ja = corpus
    plan = plan_cells(version=v1, budget=100)
    cells = {c.language: c for c in plan.cells}
    assert set(cells) == {"fr", "ja"}
    assert (cells["fr"].cell.population, cells["fr"].cell.labelled, cells["fr"].cell.correct) == (60, 40, 36)
    assert cells["fr"].interval == pytest.approx(proportion_confint(36, 40, alpha=0.05, method="wilson"))
    assert cells["fr"].need_5 == needed_by_search(36, 40, 0.05)
    assert cells["fr"].need_3 == needed_by_search(36, 40, 0.03)
    # ja is below the evidence floor: no accuracy, no interval, and the plan uses p = 0.5.
    assert cells["ja"].cell.labelled < EVIDENCE_FLOOR
    assert cells["ja"].interval is None and cells["ja"].accuracy is None
    assert cells["ja"].need_5 == needed_by_search(5, 10, 0.05)  # p = 0.5 whatever ja's 5 of 10 says
    assert cells["ja"].allocated > cells["fr"].allocated
    assert cells["ja"].allocated + cells["fr"].allocated == 100


def test_plan_labels_prints_insufficient_evidence_and_json(corpus):
    out = StringIO()
    call_command("plan_labels", "--judge", "speakability", "--budget", "50", "--json", stdout=out)
    report = json.loads(out.getvalue())
    by_language = {c["language"]: c for c in report["cells"]}
    assert by_language["ja"]["accuracy"] == "insufficient evidence"
    assert by_language["ja"]["interval"] == "insufficient evidence"
    assert by_language["fr"]["accuracy"] == pytest.approx(0.9)
    assert sum(c["allocated"] for c in report["cells"]) == 50
    out = StringIO()
    call_command("plan_labels", "--judge", "speakability", stdout=out)
    text = out.getvalue()
    assert "insufficient evidence" in text and "need ±5" in text


def test_the_queue_order_follows_the_allocation(corpus, make_user):
    judge, v1, fr, ja = corpus
    # Two equally urgent open items (QA sample); fr was created first so it would come first by id.
    fr_item = factories.item(judge, fr[50], status=ReviewItem.Status.OPEN, reasons=[ReviewItem.Reason.QA_SAMPLE])
    ja_item = factories.item(judge, ja[50], status=ReviewItem.Status.OPEN, reasons=[ReviewItem.Reason.QA_SAMPLE])
    ReviewItem.objects.update(priority=100)
    terms = label_plan_apply(version=v1, budget=100)
    assert terms["ja"] == PLAN_TERM_MAX and 0 < terms["fr"] < PLAN_TERM_MAX
    fr_item.refresh_from_db()
    ja_item.refresh_from_db()
    assert ja_item.priority == 100 + PLAN_TERM_MAX and fr_item.priority == 100 + terms["fr"]
    reviewer = make_user("kim", languages=["fr", "ja"])
    assert item_claim(user=reviewer).pk == ja_item.pk

    # Applying again replaces the term instead of stacking it.
    label_plan_apply(version=v1, budget=100)
    ja_item.refresh_from_db()
    assert ja_item.priority == 100 + PLAN_TERM_MAX

    # Items of a language outside the plan lose their term.
    factories.item(judge, factories.agent_turns("calls-ko", 1, language="ko")[0], status=ReviewItem.Status.OPEN)
    ko_item = ReviewItem.objects.get(language="ko")
    ReviewItem.objects.filter(pk=ko_item.pk).update(priority=207, plan_term=7)
    label_plan_apply(version=v1, budget=100)
    ko_item.refresh_from_db()
    assert (ko_item.priority, ko_item.plan_term) == (200, 0)
