"""Runs done right: `sweep --repeats N --variance-sample 1` repeats every target, and judge_report reads the
runs of that one sweep over the same targets."""

import json
from io import StringIO

import pytest
from django.core.management import call_command

from reviewapp.models import GoldLabel, Sweep, Turn, Verdict
from tests.factories import dataset_of_calls, store_judge


@pytest.mark.django_db(transaction=True)
def test_repeats_with_a_full_variance_sample_repeat_every_target_and_the_report_reads_those_runs(
    scripted_llm, eager_celery
):
    version = store_judge("conciseness")
    dataset_of_calls("runs", {f"c{i}": ("en", [f"turn {i}", f"more {i}"]) for i in range(4)})
    targets = Turn.objects.filter(conversation__dataset__name="runs", role="agent").count()
    call_command(
        "sweep",
        "--dataset", "runs", "--judge", "conciseness@1.0", "--repeats", "3", "--variance-sample", "1", "--eager",
        stdout=StringIO(), stderr=StringIO(),
    )  # fmt: skip
    sweep = Sweep.objects.get()
    per_run = {
        run: Verdict.objects.filter(sweep=sweep, run_index=run).values("turn_id").distinct().count() for run in range(3)
    }
    assert per_run == {0: targets, 1: targets, 2: targets}

    for turn in Turn.objects.filter(conversation__dataset__name="runs", role="agent"):
        GoldLabel.objects.create(
            judge=version.judge, conversation=turn.conversation, turn=turn, source="imported", rating=3
        )
    out = StringIO()
    call_command("judge_report", "--judge", "conciseness", "--json", "--sweep", str(sweep.pk), stdout=out)
    result = json.loads(out.getvalue())
    assert result["runs_accuracy"]["runs"] == 3
    assert [r["n"] for r in result["runs"]["per_run"]] == [targets] * 3
    assert result["runs"]["sweep"] == sweep.pk and result["runs"]["dropped_targets"] == 0


@pytest.mark.django_db
def test_a_sweeps_qa_sample_is_drawn_per_language_from_every_target_unresolved_ones_included(scripted_llm, run_sweep):
    from reviewapp.models import ReviewItem

    version = store_judge("conciseness")
    texts = {f"fr{i}": ("fr", [f"tour {i} [[bad]]" if i % 2 else f"tour {i}"]) for i in range(8)}
    texts |= {f"ja{i}": ("ja", [f"ターン {i}"]) for i in range(3)}
    dataset = dataset_of_calls("qa-strata", texts)
    run_sweep(dataset=dataset, judge_versions=[version], qa_sample=0.5)
    qa = [item for item in ReviewItem.objects.all() if "qa_sample" in item.reasons]
    by_language = {lang: [i for i in qa if i.language == lang] for lang in ("fr", "ja")}
    # ceil(0.5 * 8) of the 8 French targets, half of them unresolved, and ceil(0.5 * 3) of the 3 Japanese.
    assert (len(by_language["fr"]), len(by_language["ja"])) == (4, 2)
    assert {i.sample_weight for i in by_language["fr"]} == {2.0}
    assert all(i.sample_weight == pytest.approx(1.5) for i in by_language["ja"])
