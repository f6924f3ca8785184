"""The sweep the worker tests run and kill: a corpus whose turns make tests/llm_server.py answer badly,
the shipped conciseness judge swept over it on the worker, a SIGKILL once some verdicts are written, and
the check that every owed verdict exists exactly once."""

from collections import Counter

from reviewapp.judging.services.sweeps import sweep_start
from reviewapp.judging.tasks.sweeps import sweep_queue
from reviewapp.models import Conversation, Dataset, JudgeVersion, Sweep, Turn, Verdict
from tests.factories import store_judge

TURNS = 300
REPEATS = 3
VARIANCE_SAMPLE = 0.2


def marker_for(number: int) -> str:
    if number % 10 == 3:
        return "[[llm:bad_json]]"
    if number % 15 == 4:
        return "[[llm:out_of_range]]"
    if number % 20 == 5:
        return "[[llm:unsure]]"
    if number % 25 == 6:
        return "[[llm:server_error]]"
    return ""


def make_corpus() -> Dataset:
    """One agent turn per conversation, so a marker only ever reaches its own turn's prompt."""
    dataset = Dataset.objects.create(name="worker-sweep")
    conversations = Conversation.objects.bulk_create(
        [Conversation(dataset=dataset, external_id=f"call-{n:04d}", language="en") for n in range(TURNS)]
    )
    turns = []
    for number, conversation in enumerate(conversations):
        turns.append(Turn(conversation=conversation, position=0, role=Turn.Role.USER, text=f"Question {number}?"))
        turns.append(
            Turn(
                conversation=conversation,
                position=1,
                role=Turn.Role.AGENT,
                text=f"Answer number {number}. {marker_for(number)}".strip(),
            )
        )
    Turn.objects.bulk_create(turns)
    return dataset


def start_sweep(*, qa_sample: float) -> tuple[JudgeVersion, Sweep, set[tuple[int, int]]]:
    """The shipped conciseness judge swept over make_corpus() on the worker: (version, sweep, the
    (turn id, run) pairs it owes: run 0 of every agent turn, every run of the variance sample)."""
    judge = store_judge("conciseness")
    sweep = sweep_start(
        dataset=make_corpus(),
        judge_versions=[judge],
        repeats=REPEATS,
        variance_sample=VARIANCE_SAMPLE,
        qa_sample=qa_sample,
        dispatch=sweep_queue,
    )
    sampled = set(sweep.params["variance_sample"]["turn"])
    assert len(sampled) == round(VARIANCE_SAMPLE * TURNS)
    expected = {(turn_id, 0) for turn_id in Turn.objects.filter(role="agent").values_list("id", flat=True)}
    expected |= {(turn_id, run) for turn_id in sampled for run in range(1, REPEATS)}
    return judge, sweep, expected


def kill_mid_sweep(worker, sweep: Sweep, expected: set, *, written: int, wait_until) -> None:
    """SIGKILL the worker once it has written `written` verdicts of the sweep, before it wrote them all."""
    written_before_kill = wait_until(
        lambda: Verdict.objects.filter(sweep=sweep).count() >= written and Verdict.objects.filter(sweep=sweep).count(),
        timeout=120,
        message="the worker to write its first verdicts",
    )
    worker.kill()
    assert written_before_kill < len(expected), "the sweep ended before the worker could be killed"


def assert_each_owed_verdict_once(sweep: Sweep, judge: JudgeVersion, expected: set) -> None:
    """Every (target, run) the sweep owes has exactly one verdict of the version, and the sweep counted them."""
    keys = list(Verdict.objects.filter(sweep=sweep, judge_version=judge).values_list("turn_id", "run_index"))
    doubled = [key for key, count in Counter(keys).items() if count > 1]
    assert doubled == []
    assert set(keys) == expected  # none lost, none extra
    assert sweep.verdicts_written == len(expected)
    assert sweep.total_targets == TURNS
