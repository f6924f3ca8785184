"""Sweep service and tasks: tiers, variance runs, idempotence, counters, LLM tier off (eager Celery, SQLite)."""

import pytest

from reviewapp.judging.services import sweeps as sweeps_service
from reviewapp.judging.services.sweeps import (
    LLM_OFF_EXPLANATION,
    SweepError,
    sweep_chunk_run,
    sweep_finalize,
    sweep_start,
)
from reviewapp.judging.tasks.sweeps import sweep_queue
from reviewapp.models import JudgeCall, Sweep, Verdict
from tests.factories import add_signature, dataset_of_calls, store_judge
from tests.reviewapp.corpus.counts_support import assert_kept

# Fixtures shared with the triage and gate tests.

pytestmark = pytest.mark.django_db


@pytest.fixture
def corpus():
    return dataset_of_calls(
        "calls-en",
        {
            "c1": ("en", ["Sure, let me check that for you.", "Your flight leaves at nine. [[r=2]]"]),
            # One marker per conversation: a prompt carries the turns before its own.
            "c2": ("en", ["I am not sure what you mean [[unsure]]"]),
            "c3": ("en", ["Booked. [[bad]]"]),
            "c4": ("en", ["Done [[error]]"]),
            "c5": ("en", ["It is rated out of range [[oob]]"]),
            "c6": ("fr", ["Votre vol part à neuf heures."]),
        },
    )


@pytest.fixture
def conciseness():
    return store_judge("conciseness")


def test_sweep_runs_signatures_first_then_the_llm_and_counts_from_verdicts(
    corpus, conciseness, scripted_llm, run_sweep, settings
):
    settings.TRIBUNAL_CODE_VERSION = "abc123"
    add_signature(conciseness.judge)
    sweep = run_sweep(dataset=corpus, judge_versions=[conciseness], qa_sample=0)

    assert sweep.status == Sweep.Status.DONE
    assert sweep.code_version == "abc123"
    assert sweep.total_targets == 7  # agent turns only
    verdicts = {v.turn.text: v for v in Verdict.objects.filter(sweep=sweep).select_related("turn", "call")}
    assert len(verdicts) == 7

    filler = verdicts["Sure, let me check that for you."]
    assert (filler.tier, filler.status, filler.rating, filler.passed) == ("signature", "resolved", 1.0, False)
    assert filler.signature is not None and filler.call is None

    rated = verdicts["Your flight leaves at nine. [[r=2]]"]
    assert (rated.tier, rated.status, rated.rating, rated.passed, rated.label) == (
        "llm",
        "resolved",
        2.0,
        True,
        "adequate",
    )
    assert rated.call.raw_response == rated.raw_text
    assert "[[r=2]]" in rated.call.user_prompt.text

    for text in ("I am not sure what you mean [[unsure]]", "Booked. [[bad]]", "It is rated out of range [[oob]]"):
        verdict = verdicts[text]
        assert verdict.status == Verdict.Status.UNRESOLVED, text
        assert verdict.rating is None and verdict.passed is None
        assert verdict.raw_text == verdict.call.raw_response != ""
    assert "uncertain" in verdicts["I am not sure what you mean [[unsure]]"].explanation
    assert "outside the scale" in verdicts["It is rated out of range [[oob]]"].explanation

    failed = verdicts["Done [[error]]"]
    assert failed.status == Verdict.Status.ERROR and "HTTP 500" in failed.explanation
    assert failed.call.error

    assert (sweep.tier1_resolved, sweep.escalated, sweep.unresolved, sweep.failed) == (1, 6, 3, 1)
    assert sweep.verdicts_written == 7
    assert len(scripted_llm.calls) == 6  # the signature saved one call
    assert JudgeCall.objects.filter(sweep=sweep).count() == 6


def test_variance_runs_only_on_a_sample_seeded_by_the_sweep(conciseness, scripted_llm, run_sweep):
    dataset = dataset_of_calls("many", {f"c{i}": ("en", [f"answer {i} a", f"answer {i} b"]) for i in range(10)})
    sweep = run_sweep(dataset=dataset, judge_versions=[conciseness], repeats=3, variance_sample=0.25, qa_sample=0)

    sampled = sweep.params["variance_sample"]["turn"]
    assert len(sampled) == 5  # 25% of 20 turns
    assert sampled == sweeps_service.variance_sample_pick(
        sweep_id=sweep.pk, target_ids=sweeps_service.target_ids_for(dataset=dataset, level="turn"), rate=0.25
    )
    runs = {}
    for turn_id, run_index in Verdict.objects.filter(sweep=sweep).values_list("turn_id", "run_index"):
        runs.setdefault(turn_id, set()).add(run_index)
    assert {t for t, r in runs.items() if r == {0, 1, 2}} == set(sampled)
    assert all(r == {0} for t, r in runs.items() if t not in sampled)
    assert sweep.verdicts_written == 20 + 2 * 5 == sweep.params["expected_verdicts"]
    assert sweep.status == Sweep.Status.DONE


def test_variance_runs_skip_targets_resolved_by_a_signature(conciseness, scripted_llm, run_sweep):
    add_signature(conciseness.judge, pattern="let me check")
    dataset = dataset_of_calls("sig", {"c1": ("en", ["let me check", "let me check again", "fine"])})
    sweep = run_sweep(dataset=dataset, judge_versions=[conciseness], repeats=2, variance_sample=1.0, qa_sample=0)
    assert sweep.status == Sweep.Status.DONE
    assert sweep.tier1_resolved == 2
    assert sweep.verdicts_written == 2 + 2  # the LLM target got two runs, the signature targets one
    assert len(scripted_llm.calls) == 2


def test_a_redelivered_chunk_calls_the_llm_only_for_missing_verdicts(corpus, conciseness, scripted_llm, run_sweep):
    sweep = run_sweep(dataset=corpus, judge_versions=[conciseness], qa_sample=0)
    before = (sweep.verdicts_written, sweep.tier1_resolved, sweep.escalated, sweep.unresolved, sweep.failed)
    calls = len(scripted_llm.calls)
    [(jv_id, target_ids)] = sweeps_service.sweep_chunks(sweep=sweep)

    outcome = sweep_chunk_run(sweep_id=sweep.pk, judge_version_id=jv_id, target_ids=target_ids)
    assert outcome.llm_calls == 0 and outcome.llm_verdicts == 0
    assert len(scripted_llm.calls) == calls

    lost = Verdict.objects.filter(sweep=sweep).order_by("id")[:2]
    lost_turns = {v.turn_id for v in lost}
    Verdict.objects.filter(pk__in=[v.pk for v in lost]).delete()
    outcome = sweep_chunk_run(sweep_id=sweep.pk, judge_version_id=jv_id, target_ids=target_ids)
    assert outcome.llm_calls == 2
    assert {v.turn_id for v in Verdict.objects.filter(sweep=sweep)} >= lost_turns

    sweep = sweep_finalize(sweep_id=sweep.pk)
    sweep = sweep_finalize(sweep_id=sweep.pk)
    assert (sweep.verdicts_written, sweep.tier1_resolved, sweep.escalated, sweep.unresolved, sweep.failed) == before
    keys = list(Verdict.objects.filter(sweep=sweep).values_list("judge_version_id", "turn_id", "run_index"))
    assert len(keys) == len(set(keys))


def test_with_the_llm_tier_off_escalated_targets_are_unresolved_and_say_so(corpus, conciseness, llm_off, run_sweep):
    add_signature(conciseness.judge)
    sweep = run_sweep(dataset=corpus, judge_versions=[conciseness], repeats=3, variance_sample=1.0, qa_sample=0)
    assert sweep.status == Sweep.Status.DONE
    assert sweep.tier1_resolved == 1
    llm = Verdict.objects.filter(sweep=sweep, tier=Verdict.Tier.LLM)
    assert llm.count() == 6 == sweep.unresolved
    assert set(llm.values_list("explanation", flat=True)) == {LLM_OFF_EXPLANATION}
    assert not llm.exclude(run_index=0).exists()  # no extra runs without an LLM
    assert sweep.verdicts_written == 7


def test_language_filter_and_conversation_level_judges(corpus, scripted_llm, run_sweep):
    turn_judge = store_judge("conciseness")
    conversation_judge = store_judge(
        "conciseness",
        slug="whole_call",
        version="0.1",
        level="conversation",
        user_template="Rate this call:\n{conversation_turns}",
    )
    sweep = run_sweep(dataset=corpus, judge_versions=[turn_judge, conversation_judge], language="fr", qa_sample=0)
    assert sweep.status == Sweep.Status.DONE
    assert sweep.total_targets == 2  # one French agent turn, one French conversation
    by_judge = {v.judge_version_id: v for v in Verdict.objects.filter(sweep=sweep)}
    assert by_judge[turn_judge.pk].turn.text == "Votre vol part à neuf heures."
    assert by_judge[conversation_judge.pk].turn is None
    assert by_judge[conversation_judge.pk].conversation.language == "fr"
    assert by_judge[conversation_judge.pk].status == Verdict.Status.RESOLVED
    assert any("Rate this call" in call and "neuf heures" in call for call in scripted_llm.calls)


def test_sweep_start_refuses_what_it_cannot_run(corpus, conciseness):
    with pytest.raises(SweepError, match="at least one judge"):
        sweep_start(dataset=corpus, judge_versions=[])
    with pytest.raises(SweepError, match="repeats"):
        sweep_start(dataset=corpus, judge_versions=[conciseness], repeats=0)
    with pytest.raises(SweepError, match="variance sample"):
        sweep_start(dataset=corpus, judge_versions=[conciseness], variance_sample=1.5)
    with pytest.raises(SweepError, match="no target"):
        sweep_start(dataset=corpus, judge_versions=[conciseness], language="ja")
    assert not Sweep.objects.exists()


def test_code_version_prefers_the_setting_then_git_then_unknown(settings, monkeypatch):
    from reviewapp import versioning

    settings.TRIBUNAL_CODE_VERSION = "release-2026.11"
    assert sweeps_service.code_version() == "release-2026.11"

    settings.TRIBUNAL_CODE_VERSION = ""
    monkeypatch.setattr(versioning, "_git_head", lambda: "0123abcd" * 5)
    assert sweeps_service.code_version() == "0123abcd" * 5

    monkeypatch.setattr(versioning, "_git_head", lambda: "")
    assert sweeps_service.code_version() == "unknown"


def test_sweep_start_queues_the_dispatch_only_on_commit(corpus, conciseness, eager_celery, scripted_llm):
    from django.db import transaction

    with transaction.atomic():
        sweep = sweep_start(dataset=corpus, judge_versions=[conciseness], dispatch=sweep_queue)
        transaction.set_rollback(True)
    assert not Verdict.objects.filter(sweep_id=sweep.pk).exists()
    assert scripted_llm.calls == []


def test_sweep_start_hands_the_sweep_id_to_the_callers_dispatch_after_the_commit(
    corpus, conciseness, django_capture_on_commit_callbacks
):
    queued: list[int] = []
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        sweep = sweep_start(dataset=corpus, judge_versions=[conciseness], dispatch=queued.append)
    assert queued == []  # nothing before the commit
    for callback in callbacks:
        callback()
    assert queued == [sweep.pk]
    # Without a dispatch the sweep is only planned.
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        sweep_start(dataset=corpus, judge_versions=[conciseness])
    assert callbacks == [] and queued == [sweep.pk]


def test_a_sweeps_verdicts_are_in_the_dataset_counts(corpus, conciseness, scripted_llm, run_sweep):
    add_signature(conciseness.judge)
    sweep = run_sweep(dataset=corpus, judge_versions=[conciseness], qa_sample=0)
    counts = assert_kept()
    assert Verdict.objects.filter(sweep=sweep).count() == 7
    assert (counts[(corpus.pk, "en", "verdicts")], counts[(corpus.pk, "fr", "verdicts")]) == (6, 1)
