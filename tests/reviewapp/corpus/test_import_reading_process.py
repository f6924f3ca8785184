"""A new dataset's import on PostgreSQL reads in a child process while the importing one writes: the same
rows as reading on a thread, its judges and versions created in the import's transaction when a later
batch first names them, every error (a bad record, a crash, a killed reader, a refused write) leaving
nothing written and no process behind, and the thread as before where a fork is not safe."""

import hashlib
import json
import os
import threading
import warnings

import pytest
from django.db import IntegrityError, connection

from reviewapp.corpus.importers import reading_process
from reviewapp.corpus.importers.bulk import StreamWriter
from reviewapp.corpus.importers.reading_process import ReadingFailed, ReadingProcess
from reviewapp.corpus.services.imports import ImportFailed, dataset_import
from reviewapp.models import Conversation, Dataset, DatasetCount, GoldLabel, Judge, Sweep, Turn, Verdict

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def postgres_only():
    if connection.vendor != "postgresql":
        pytest.skip("the reading process is for COPY imports, PostgreSQL's")


def call(i, judge="helpful", version="v1"):
    turns = [{"role": "agent" if t % 2 == 0 else "user", "text": f"turn {t} of call {i}\tend"} for t in range(3)]
    turns[-1]["labels"] = [{"judge": judge, "rating": 1 + i % 3}]
    turns[-1]["verdicts"] = [{"judge": judge, "version": version, "rating": 1 + (i + 1) % 3}]
    return {"external_id": f"call-{i:04d}", "language": "fr" if i % 2 else "de", "turns": turns}


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def no_child_left():
    """Every child this process started has been waited for."""
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


def reading_pids(monkeypatch, tmp_path):
    """Record the process id that prepares each batch (a file: the child cannot append to our lists)."""
    log = tmp_path / "pids.txt"
    original = StreamWriter.prepare

    def prepare(self, conversations, *args, **kwargs):
        with log.open("a") as handle:
            handle.write(f"{os.getpid()}\n")
        return original(self, conversations, *args, **kwargs)

    monkeypatch.setattr(StreamWriter, "prepare", prepare)
    return lambda: {int(line) for line in log.read_text().split()} if log.exists() else set()


def rows(name):
    dataset = Dataset.objects.get(name=name)
    turns = sorted(
        Turn.objects.filter(conversation__dataset=dataset).values_list(
            "conversation__external_id", "position", "role", "text", "audio_start_ms"
        )
    )
    labels = sorted(
        GoldLabel.objects.filter(conversation__dataset=dataset).values_list(
            "conversation__external_id", "turn__position", "judge__slug", "rating"
        )
    )
    verdicts = sorted(
        Verdict.objects.filter(conversation__dataset=dataset).values_list(
            "conversation__external_id",
            "turn__position",
            "judge_version__judge__slug",
            "judge_version__version",
            "rating",
        )
    )
    counts = sorted(
        DatasetCount.objects.filter(dataset=dataset).values_list(
            "language", "conversations", "turns", "gold_labels", "verdicts"
        )
    )
    return dataset.kind, turns, labels, verdicts, counts


def test_the_import_reads_in_a_child_process_and_writes_what_reading_on_a_thread_writes(
    tmp_path, monkeypatch, settings
):
    assert reading_process.available(), [thread.name for thread in threading.enumerate()]
    path = write_jsonl(tmp_path / "calls.jsonl", [call(i) for i in range(45)])
    pids = reading_pids(monkeypatch, tmp_path)

    summary = dataset_import(path=path, fmt="jsonl", dataset_name="by-process", batch_size=10)

    assert pids() and os.getpid() not in pids()  # every batch was prepared elsewhere
    no_child_left()
    settings.TRIBUNAL_IMPORT_READING_PROCESS = False
    (tmp_path / "pids.txt").unlink()
    on_thread = dataset_import(path=path, fmt="jsonl", dataset_name="by-thread", batch_size=10)
    assert pids() == {os.getpid()}

    reused = {"judges": 0, "judge_versions": 0}  # the second import finds the first one's judge and version
    assert summary.as_dict() | {"dataset": None, "created": summary.created | reused} == on_thread.as_dict() | {
        "dataset": None
    }
    assert summary.created == {
        "dataset": 1, "judges": 1, "judge_versions": 1, "sweeps": 1,
        "conversations": 45, "turns": 135, "labels": 45, "verdicts": 45,
    }  # fmt: skip
    assert rows("by-process") == rows("by-thread")
    kind, turns, _, _, counts = rows("by-process")
    assert kind == "validation" and turns[0] == ("call-0000", 0, "agent", "turn 0 of call 0\tend", None)
    assert counts == [("de", 23, 69, 23, 23), ("fr", 22, 66, 22, 22)]
    sweep = Sweep.objects.get(dataset__name="by-process")
    assert (sweep.total_targets, sweep.verdicts_written) == (45, 45)
    # The file's sha256, taken while the child read, is the sweep's as it is on the thread's import.
    assert sweep.params["content_sha256"] == hashlib.sha256(b"calls.jsonl" + path.read_bytes()).hexdigest()
    assert sweep.params == Sweep.objects.get(dataset__name="by-thread").params


def test_a_judge_first_named_in_a_later_batch_is_created_in_the_import_when_that_batch_comes(tmp_path):
    records = [call(i) for i in range(30)] + [call(i, judge="concise", version="v9") for i in range(30, 35)]
    records[12]["turns"][-1]["verdicts"].append({"judge": "helpful", "version": "v2", "rating": 3})
    path = write_jsonl(tmp_path / "calls.jsonl", records)

    summary = dataset_import(path=path, fmt="jsonl", dataset_name="two-judges", batch_size=10)

    assert (summary.created["judges"], summary.created["judge_versions"], summary.created["sweeps"]) == (2, 3, 1)
    assert Judge.objects.get(slug="concise").level == "turn"
    by_judge = GoldLabel.objects.filter(conversation__dataset__name="two-judges")
    assert by_judge.filter(judge__slug="concise").count() == 5 and by_judge.filter(judge__slug="helpful").count() == 30
    versions = Verdict.objects.filter(conversation__dataset__name="two-judges").values_list(
        "judge_version__judge__slug", "judge_version__version", "conversation__external_id", "turn__position"
    )
    assert ("concise", "v9", "call-0034", 2) in versions and ("helpful", "v2", "call-0012", 2) in versions
    sweep = Sweep.objects.get(dataset__name="two-judges")
    assert sorted(sweep.judge_versions.values_list("version", flat=True)) == ["v1", "v2", "v9"]
    no_child_left()


def test_a_bad_record_late_in_the_file_refuses_the_import_and_every_bad_record_is_listed(tmp_path):
    records = [call(i) for i in range(40)]
    records[33]["turns"][0]["audio_start_ms"] = -5
    records[38]["turns"] = "none"
    path = write_jsonl(tmp_path / "calls.jsonl", records)

    with pytest.raises(ImportFailed) as refused:
        dataset_import(path=path, fmt="jsonl", dataset_name="calls", batch_size=10)

    assert [(e["line"], e["field"]) for e in refused.value.summary.errors] == [
        (34, "turns[0].audio_start_ms"),
        (39, "turns"),
    ]
    assert not Dataset.objects.exists() and not Turn.objects.exists() and not Judge.objects.exists()
    no_child_left()

    summary = dataset_import(path=path, fmt="jsonl", dataset_name="calls", batch_size=10, skip_invalid=True)
    assert summary.skipped == 2 and summary.created["conversations"] == 38
    no_child_left()


def test_an_unreadable_file_is_refused_as_before(tmp_path):
    path = tmp_path / "utf16.jsonl"
    path.write_bytes(json.dumps(call(1)).encode("utf-16"))
    with pytest.raises(ImportFailed) as refused:
        dataset_import(path=path, fmt="jsonl", dataset_name="u")
    assert "UTF-16" in refused.value.summary.errors[0]["message"]
    no_child_left()


def test_an_error_in_the_reading_process_is_raised_in_the_importing_one_and_nothing_is_written(tmp_path, monkeypatch):
    path = write_jsonl(tmp_path / "calls.jsonl", [call(i) for i in range(40)])
    original = StreamWriter.prepare

    def prepare(self, conversations, *args, **kwargs):
        if conversations[0].external_id == "call-0020":
            raise LookupError("no such thing in batch 3")
        return original(self, conversations, *args, **kwargs)

    monkeypatch.setattr(StreamWriter, "prepare", prepare)
    with pytest.raises(LookupError, match="batch 3") as raised:
        dataset_import(path=path, fmt="jsonl", dataset_name="calls", batch_size=10)

    assert "raised in the reading process" in str(raised.value.__cause__)
    assert "prepare" in str(raised.value.__cause__)  # the child's traceback
    assert not Dataset.objects.exists() and not Conversation.objects.exists()
    no_child_left()


def test_a_reading_process_that_dies_fails_the_import_and_writes_nothing(tmp_path, monkeypatch):
    path = write_jsonl(tmp_path / "calls.jsonl", [call(i) for i in range(40)])
    original, importing = StreamWriter.prepare, os.getpid()
    assert reading_process.available()

    def prepare(self, conversations, *args, **kwargs):
        if conversations[0].external_id == "call-0020":
            assert os.getpid() != importing, "prepared in the importing process"
            os._exit(9)  # as if killed for its memory
        return original(self, conversations, *args, **kwargs)

    monkeypatch.setattr(StreamWriter, "prepare", prepare)
    with pytest.raises(ReadingFailed, match="exit status 9"):
        dataset_import(path=path, fmt="jsonl", dataset_name="calls", batch_size=10)

    assert not Dataset.objects.exists() and not Turn.objects.exists()
    no_child_left()


def test_a_refused_write_stops_the_reading_process_and_rolls_everything_back(tmp_path, monkeypatch):
    path = write_jsonl(tmp_path / "calls.jsonl", [call(i) for i in range(200)])
    original, written = StreamWriter.write, []

    def write(self, prepared):
        written.append(prepared.counts["conversations"])
        if len(written) == 2:
            raise IntegrityError("the second batch is refused")
        original(self, prepared)

    monkeypatch.setattr(StreamWriter, "write", write)
    with pytest.raises(IntegrityError, match="second batch"):
        dataset_import(path=path, fmt="jsonl", dataset_name="calls", batch_size=10)

    assert written == [10, 10]  # nothing was written after the refusal
    assert not Dataset.objects.exists() and not Turn.objects.exists()
    no_child_left()  # the reader, still reading ahead, was stopped and waited for


def test_with_another_thread_running_the_import_reads_on_a_thread_as_before(tmp_path, monkeypatch):
    path = write_jsonl(tmp_path / "calls.jsonl", [call(i) for i in range(25)])
    pids = reading_pids(monkeypatch, tmp_path)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert not reading_process.available()
        summary = dataset_import(path=path, fmt="jsonl", dataset_name="threads", batch_size=10)
    finally:
        stop.set()
        other.join()
    assert pids() == {os.getpid()} and summary.created["turns"] == 75
    assert reading_process.available()


def test_the_channel_carries_questions_answers_and_large_messages_in_order():
    big = b"x" * (3 << 20)

    def read(channel):
        channel.send(("batch", big))
        answer = channel.ask(("parents", {"a"}))
        channel.send(("got", answer))

    with ReadingProcess(read) as reading:
        seen = []
        for message in reading.messages():
            if message[0] == "ask":
                reading.answer({"a": 7})
            seen.append(message if message[0] != "batch" else ("batch", len(message[1])))
    assert seen == [("batch", 3 << 20), ("ask", ("parents", {"a"})), ("got", {"a": 7})]
    assert reading.child_peak_rss_mb > 0
    no_child_left()


def test_a_numerical_library_s_idle_threads_do_not_keep_the_import_from_reading_in_a_process(tmp_path, monkeypatch):
    import numpy  # noqa: F401 - its BLAS starts threads of its own in this process

    path = write_jsonl(tmp_path / "calls.jsonl", [call(i) for i in range(15)])
    pids = reading_pids(monkeypatch, tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)  # fork's warning about other threads
        summary = dataset_import(path=path, fmt="jsonl", dataset_name="with-blas", batch_size=10)
    assert os.getpid() not in pids() and summary.created["turns"] == 45
    no_child_left()


def test_beside_the_idle_llm_pool_of_a_worker_the_import_still_reads_in_a_process(tmp_path, monkeypatch):
    """A worker process that ran a sweep keeps its LLM threads, waiting for calls: they hold nothing a
    child needs, so an import there still forks. While one of them is at a call, it does not."""
    from reviewapp import idle_threads
    from reviewapp.judging.services.sweeps.llm_tier import llm_pool

    pool = llm_pool(3)
    assert pool.submit(idle_threads.running, lambda: "answered").result() == "answered"
    assert any(thread.name.startswith("llm_") for thread in threading.enumerate())
    path = write_jsonl(tmp_path / "calls.jsonl", [call(i) for i in range(15)])
    pids = reading_pids(monkeypatch, tmp_path)

    dataset_import(path=path, fmt="jsonl", dataset_name="beside-idle", batch_size=10)
    assert pids() and os.getpid() not in pids()

    at_work, release = threading.Event(), threading.Event()

    def call_in_flight():
        at_work.set()
        release.wait(10)

    busy = pool.submit(idle_threads.running, call_in_flight)
    at_work.wait(10)
    try:
        assert not reading_process.available()
        (tmp_path / "pids.txt").unlink()
        summary = dataset_import(path=path, fmt="jsonl", dataset_name="beside-busy", batch_size=10)
    finally:
        release.set()
        busy.result(10)
    assert pids() == {os.getpid()} and summary.created["turns"] == 45
    assert rows("beside-busy")[1:] == rows("beside-idle")[1:]
    no_child_left()


def test_a_fork_waits_for_no_pool_work_and_no_pool_work_starts_during_it():
    from reviewapp import idle_threads

    started = threading.Event()
    with idle_threads.quiet() as quiet:
        assert quiet
        worker = threading.Thread(target=idle_threads.running, args=(started.set,), name="llm_test")
        worker.start()
        assert not started.wait(0.2)  # held back while the fork is taken
    worker.join(5)
    assert started.is_set() and idle_threads.only_idle_others()
