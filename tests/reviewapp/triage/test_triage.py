"""Triage after a sweep: reasons, merging, priorities, QA sample weights and run-to-run variance."""

import pytest

from reviewapp.models import ReviewItem, Verdict
from reviewapp.triage.services.triage import criterion_values, triage_run
from tests.factories import dataset_of_calls, shipped_spec, store_judge

pytestmark = pytest.mark.django_db
R = ReviewItem.Reason


def items_by_text(judge=None):
    qs = ReviewItem.objects.select_related("turn")
    if judge is not None:
        qs = qs.filter(judge=judge)
    return {item.turn.text: item for item in qs}


def test_unresolved_and_uncertain_answers_are_queued_first(scripted_llm, run_sweep):
    judge = store_judge("conciseness")
    dataset = dataset_of_calls(
        "t1",
        {"a": ("en", ["fine [[r=3]]"]), "b": ("en", ["hmm [[unsure]]"]), "c": ("en", ["oops [[bad]]"])},
        reviews_required=2,
    )
    run_sweep(dataset=dataset, judge_versions=[judge], qa_sample=0)
    items = items_by_text()
    assert set(items) == {"hmm [[unsure]]", "oops [[bad]]"}
    assert items["hmm [[unsure]]"].reasons == [R.UNRESOLVED, R.UNCERTAIN]
    assert items["oops [[bad]]"].reasons == [R.UNRESOLVED]
    item = items["oops [[bad]]"]
    assert (item.priority, item.language, item.dataset_id, item.reviews_required) == (300, "en", dataset.pk, 2)


def test_runs_that_disagree_and_high_variance_criteria(scripted_llm, run_sweep):
    judge = store_judge("conciseness")
    dataset = dataset_of_calls(
        "t2", {f"c{i}": ("en", [f"turn {i} [[flip]]" if i < 2 else f"turn {i}"]) for i in range(4)}
    )
    sweep = run_sweep(dataset=dataset, judge_versions=[judge], repeats=2, variance_sample=1.0, qa_sample=0)

    variance = sweep.params["variance"]
    stats = variance["judge_versions"][str(judge.pk)]["criteria"]
    assert variance["threshold"] == 0.15
    assert stats["rating"] == {"targets": 4, "disagreeing": 2, "rate": 0.5, "needs_labels": True}
    assert stats["passed"]["rate"] == 0.5
    items = items_by_text()
    assert items["turn 0 [[flip]]"].reasons == [R.RUNS_DISAGREE, R.HIGH_VARIANCE]
    assert items["turn 2"].reasons == [R.HIGH_VARIANCE]  # the criterion needs labels: its sample is queued
    assert items["turn 0 [[flip]]"].priority == 200
    assert "conciseness@1.0 rating" in sweep.params["triage"]["high_variance"]


def test_a_low_variance_sample_is_not_queued(scripted_llm, run_sweep):
    judge = store_judge("conciseness")
    dataset = dataset_of_calls("t3", {f"c{i}": ("en", [f"steady {i}"]) for i in range(5)})
    sweep = run_sweep(dataset=dataset, judge_versions=[judge], repeats=3, variance_sample=1.0, qa_sample=0)
    stats = sweep.params["variance"]["judge_versions"][str(judge.pk)]["criteria"]
    assert stats["rating"]["rate"] == 0.0 and not stats["rating"]["needs_labels"]
    assert not ReviewItem.objects.exists()


def test_two_judge_versions_that_disagree_on_pass_fail(scripted_llm, run_sweep):
    lenient = store_judge("conciseness")
    strict = store_judge("conciseness", version="1.1-strict", pass_threshold=3.0)
    dataset = dataset_of_calls("t4", {"a": ("en", ["middling [[r=2]]"]), "b": ("en", ["great [[r=3]]"])})
    run_sweep(dataset=dataset, judge_versions=[lenient, strict], qa_sample=0)
    items = items_by_text()
    # One item per (target, judge): both versions belong to the same judge.
    assert ReviewItem.objects.count() == 1
    assert items["middling [[r=2]]"].reasons == [R.JUDGES_DISAGREE]


def test_qa_sample_weights_and_merging_with_existing_items(scripted_llm, run_sweep):
    judge = store_judge("conciseness")
    dataset = dataset_of_calls("t5", {f"c{i}": ("en", [f"ok {i}"]) for i in range(6)})
    first_turn = dataset.conversations.order_by("id").first().turns.get(role="agent")
    ReviewItem.objects.create(
        judge=judge.judge,
        conversation=first_turn.conversation,
        turn=first_turn,
        dataset=dataset,
        language="en",
        reasons=[R.IMPORTED],
        priority=50,
    )
    sweep = run_sweep(dataset=dataset, judge_versions=[judge], qa_sample=1.0)
    assert ReviewItem.objects.count() == 6
    merged = ReviewItem.objects.get(turn=first_turn)
    assert merged.reasons == [R.QA_SAMPLE, R.IMPORTED]
    assert merged.priority == 100
    assert merged.reviews_required == 2  # an open item that joins the QA sample needs a second label
    assert set(ReviewItem.objects.values_list("sample_weight", flat=True)) == {1.0}

    again = triage_run(sweep=sweep, qa_rate=0.5)
    assert again.items_created == 0
    assert ReviewItem.objects.count() == 6
    merged.refresh_from_db()
    assert merged.reasons == [R.QA_SAMPLE, R.IMPORTED]  # never duplicated


def test_qa_sample_is_seeded_and_weighted(scripted_llm, run_sweep):
    judge = store_judge("conciseness")
    dataset = dataset_of_calls("t6", {f"c{i}": ("en", [f"ok {i}"]) for i in range(40)})
    sweep = run_sweep(dataset=dataset, judge_versions=[judge], qa_sample=0.25)
    sampled = set(ReviewItem.objects.values_list("turn_id", flat=True))
    assert 2 <= len(sampled) <= 20
    assert set(ReviewItem.objects.values_list("sample_weight", flat=True)) == {4.0}
    # Two independent labels per QA item, even though the dataset asks for one review.
    assert dataset.reviews_required == 1
    assert set(ReviewItem.objects.values_list("reviews_required", flat=True)) == {2}
    ReviewItem.objects.all().delete()
    triage_run(sweep=sweep)
    assert set(ReviewItem.objects.values_list("turn_id", flat=True)) == sampled


def test_criterion_values_for_rubric_verdicts():
    spec = shipped_spec("turn_rubric")
    verdict = {
        "passed": False,
        "rating": 2.0,
        "sub_scores": {"addresses_request": 0.0, "clear_next_step": 1.0},
        "flags": ["required_failed:addresses_request"],
        "status": Verdict.Status.RESOLVED,
    }
    values = criterion_values(spec, verdict)
    assert values["criterion:addresses_request"] is False
    assert values["criterion:clear_next_step"] is True
    assert values["flag:required_failed:addresses_request"] is True
    assert values["passed"] is False


def test_every_reason_has_a_priority_and_a_moved_version_comes_before_the_qa_sample():
    from reviewapp.models import ReviewItem
    from reviewapp.triage.services.triage import PRIORITY, REASON_ORDER, _priority

    reasons = {choice for choice, _ in ReviewItem.Reason.choices}
    assert reasons == {str(r) for r in PRIORITY}
    assert set(REASON_ORDER) == reasons
    assert _priority(["qa_sample"]) == 100 < _priority(["version_moved"]) == 150 < _priority(["runs_disagree"]) == 200
    assert _priority(["version_moved", "gold_disagrees"]) == 250
