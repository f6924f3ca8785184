"""Judge quality pages and reviewer statistics: numbers equal scikit-learn's, gold precedence, access, queries."""

import re

import pytest
from django.urls import reverse
from sklearn.metrics import accuracy_score, cohen_kappa_score, f1_score

from reviewapp.models import GoldLabel, ReviewItem, Role
from reviewapp.quality.selectors import quality, quality_slice, reviewer_stats
from reviewapp.review.services.reviews import review_submit
from tests import factories
from tests.factories import HTMX

pytestmark = pytest.mark.django_db

GOLD = [True, True, False, True, False, False, True, True, False, True, True, False]
JUDGE = [True, False, False, True, True, False, True, True, False, True, None, False]


@pytest.fixture
def scored():
    """Twelve French turns with imported gold and one version's verdicts (one unresolved)."""
    turns = factories.judged_turns(JUDGE)
    judge = factories.binary_judge()
    v1 = factories.version(judge, "v1")
    factories.gold(judge, turns, GOLD, modes=["gloss"])
    return judge, v1, turns


def as_label(value: bool) -> str:
    return "pass" if value else "fail"


def test_version_metrics_equal_scikit_learn(scored):
    judge, v1, _ = scored
    report = quality.judge_quality(judge=judge, n_boot=200).selected
    pairs = [(as_label(g), as_label(j)) for g, j in zip(GOLD, JUDGE, strict=True) if j is not None]
    y_true, y_pred = [g for g, _ in pairs], [j for _, j in pairs]
    assert report.version == v1 and report.scored.unresolved == 1 and report.overall.n == 11
    assert report.overall.accuracy.value == pytest.approx(accuracy_score(y_true, y_pred))
    assert report.overall.macro_f1.value == pytest.approx(f1_score(y_true, y_pred, average="macro"))
    assert report.overall.kappa.value == pytest.approx(cohen_kappa_score(y_true, y_pred))
    assert report.overall.accuracy.low <= report.overall.accuracy.value <= report.overall.accuracy.high
    assert set(report.by_language) == {"fr"}


def test_gold_prefers_adjudication_then_unanimous_then_imported(scored, make_user):
    judge, _, turns = scored
    # Turn 1: judge said fail, imported gold says pass; a lead adjudicates "fail".
    GoldLabel.objects.create(
        judge=judge, conversation=turns[1].conversation, turn=turns[1], source="adjudicated", passed=False
    )
    # Turn 4: judge said pass, imported gold says fail; two reviewers agree on "pass", so the review service
    # closes the item and stores the unanimous gold label.
    item = factories.item(judge, turns[4], status=ReviewItem.Status.OPEN, reasons=["qa_sample"])
    item.reviews_required = 2
    item.save()
    for name in ("ana", "bea"):
        review_submit(item=item, user=make_user(name, languages=["fr"]), rating=None, passed=True)
    item.refresh_from_db()
    assert item.status == ReviewItem.Status.CLOSED
    gold = quality_slice.judge_gold(judge=judge)
    assert gold[(turns[1].conversation_id, turns[1].pk)].source == "adjudicated"
    assert gold[(turns[4].conversation_id, turns[4].pk)].source == "unanimous"
    assert gold[(turns[0].conversation_id, turns[0].pk)].source == "imported"
    report = quality.judge_quality(judge=judge, n_boot=0).selected
    assert report.overall.accuracy.value == pytest.approx(11 / 11)
    assert report.gold_sources == {"imported": 9, "adjudicated": 1, "unanimous": 1}


def test_qa_sample_is_weighted_and_disputed_items_are_separate(scored):
    judge, _, turns = scored
    # Sampled turns: weight 10 on turn 1 (judge wrong), weight 1 on turns 0 and 2 (judge right).
    factories.item(judge, turns[0], status="closed", reasons=["qa_sample"], weight=1)
    factories.item(judge, turns[1], status="closed", reasons=["qa_sample"], weight=10)
    factories.item(judge, turns[2], status="closed", reasons=["qa_sample"], weight=1)
    factories.item(judge, turns[4], status="closed", reasons=["judges_disagree"])
    report = quality.judge_quality(judge=judge, n_boot=0).selected
    assert report.qa_unweighted.accuracy.value == pytest.approx(2 / 3)
    assert report.qa_weighted.accuracy.value == pytest.approx(2 / 12)
    assert report.disputed.n == 1 and report.disputed.accuracy.value == 0.0


def test_runs_give_mean_and_standard_deviation(scored):
    judge, v1, turns = scored
    rerun = [not j if i < 3 and j is not None else j for i, j in enumerate(JUDGE)]
    sweep = factories.sweep_for(turns)
    factories.verdicts(sweep, v1, turns, JUDGE)
    factories.verdicts(sweep, v1, turns, rerun, run_index=1)
    # Another sweep with a third run is not pooled in: runs are the run indexes of one sweep.
    factories.verdicts(factories.sweep_for(turns), v1, turns, GOLD)
    report = quality.judge_quality(judge=judge, n_boot=0, slice=quality_slice.Slice(sweep_id=sweep.pk)).selected
    first = accuracy_score([as_label(g) for g, j in zip(GOLD, JUDGE, strict=True) if j is not None],
                           [as_label(j) for j in JUDGE if j is not None])  # fmt: skip
    second = accuracy_score([as_label(g) for g, j in zip(GOLD, rerun, strict=True) if j is not None],
                            [as_label(j) for j in rerun if j is not None])  # fmt: skip
    assert report.runs_accuracy.runs == 2
    assert report.runs_accuracy.mean == pytest.approx((first + second) / 2)
    assert report.runs_accuracy.std == pytest.approx(abs(first - second) / 2**0.5)


def test_judge_page_full_fragment_and_forbidden(client, make_user, scored):
    client.force_login(make_user("lea", role=Role.LEAD))
    url = reverse("quality_judge", args=["speakability"])
    html = client.get(url).content.decode()
    assert "QA sample, weighted" in html and "Disputed items" in html
    assert '<svg class="heatmap"' in html and "heat-" in html and "Per-class F1" in html
    assert not re.search(r"\sstyle=", html) and "<script>" not in html

    fragment = client.get(url, {"language": "fr"}, **HTMX).content.decode()
    assert fragment.lstrip().startswith('<section id="quality-report"') and "<html" not in fragment
    assert client.get(url, {"version": "nope"}).status_code == 404

    client.force_login(make_user("ana", languages=["fr"]))
    assert client.get(url).status_code == 403
    assert client.get(reverse("quality_index")).status_code == 403


def test_index_lists_every_version_and_draws_a_trend(client, make_user, scored):
    judge, _, turns = scored
    factories.verdicts(factories.sweep_for(turns), factories.version(judge, "v2"), turns, GOLD)
    client.force_login(make_user("lea", role=Role.LEAD))
    html = client.get(reverse("quality_index")).content.decode()
    assert ">v1<" in html and ">v2<" in html and "vs previous" in html
    fragment = client.get(reverse("quality_index"), **HTMX).content.decode()
    assert fragment.lstrip().startswith('<section id="quality-judges"')
    page = client.get(reverse("quality_judge", args=["speakability"])).content.decode()
    assert '<svg class="linechart"' in page and "<polyline" in page and "1.00" in page


def test_reviewer_statistics_for_leads_and_for_oneself(client, make_user, scored):
    judge, _, turns = scored
    ana, bea = make_user("ana", languages=["fr"]), make_user("bea", languages=["fr"])
    for index in range(3):
        item = factories.item(judge, turns[index], status="closed", reasons=["qa_sample"])
        factories.review(item, ana, passed=GOLD[index], categories=[factories.category("gloss")], seconds=60)
        factories.review(item, bea, passed=not GOLD[index] if index == 0 else GOLD[index], seconds=120)
    rows = {r.username: r for r in reviewer_stats.reviewer_stats()}
    assert rows["ana"].gold_agreement == 1.0 and rows["bea"].gold_agreement == pytest.approx(2 / 3)
    assert rows["ana"].peer_agreement == pytest.approx(2 / 3)
    assert rows["ana"].items_per_hour == pytest.approx(60) and rows["bea"].items_per_hour == pytest.approx(30)
    assert rows["ana"].top_categories == [("gloss", 3)]
    alpha = quality.judge_quality(judge=judge, n_boot=0).reviewer_alpha["fr"]
    assert alpha["units"] == 3 and alpha["alpha"] is not None

    client.force_login(make_user("lea", role=Role.LEAD))
    html = client.get(reverse("reviewer_list")).content.decode()
    assert "ana" in html and "bea" in html
    fragment = client.get(reverse("reviewer_list"), {"language": "fr"}, **HTMX).content.decode()
    assert fragment.lstrip().startswith('<section id="reviewer-rows"')

    client.force_login(ana)
    assert client.get(reverse("reviewer_list")).status_code == 403
    own = client.get(reverse("reviewer_detail", args=[ana.pk])).content.decode()
    assert "Statistics for ana" in own and ">bea<" not in own
    assert client.get(reverse("reviewer_detail", args=[bea.pk])).status_code == 403


def test_pages_run_a_fixed_number_of_queries(client, make_user, scored, django_assert_max_num_queries):
    judge, v1, _ = scored
    client.force_login(make_user("lea", role=Role.LEAD))
    for size in (5, 40):
        turns = factories.agent_turns(f"more{size}", size, language="ja")
        factories.verdicts(factories.sweep_for(turns), v1, turns, [True] * size)
        factories.gold(judge, turns, [bool(i % 3) for i in range(size)])
        for turn in turns[:3]:
            factories.review(factories.item(judge, turn, status="closed"), make_user(f"r{size}-{turn.pk}"), passed=True)
        with django_assert_max_num_queries(10):
            client.get(reverse("quality_judge", args=["speakability"]))
        with django_assert_max_num_queries(10):
            client.get(reverse("quality_index"))
        with django_assert_max_num_queries(9):
            client.get(reverse("reviewer_list"))
