"""The import's writing thread, its per-batch foreign-key checks, and the plain JSONL reader against the
checked one."""

import json
import sys
import threading

import pytest
from django.db import IntegrityError, connection, transaction
from hypothesis import given, settings
from hypothesis import strategies as st

from reviewapp.corpus.importers import pipeline
from reviewapp.corpus.importers.bulk import StreamWriter
from reviewapp.corpus.importers.jsonl_plain import plain_conversation
from reviewapp.corpus.importers.pipeline import WriterThread
from reviewapp.corpus.importers.records import FieldReader, ParsedImport, ParsedTurn
from reviewapp.corpus.importers.tribunal_jsonl import _checked_conversation, parse_conversation
from reviewapp.corpus.services.imports import ImportFailed, dataset_import
from reviewapp.models import Conversation, Dataset, GoldLabel, Turn, Verdict

pytestmark = pytest.mark.django_db


def call(i, turns=3):
    items = [{"role": "agent" if t % 2 == 0 else "user", "text": f"turn {t} of call {i}"} for t in range(turns)]
    items[-1]["labels"] = [{"judge": "helpful", "rating": 2}]
    items[-1]["verdicts"] = [{"judge": "helpful", "version": "v1", "rating": 1 + i % 3}]
    return {"external_id": f"call-{i:04d}", "turns": items}


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


# --- the writing thread -----------------------------------------------------------------------------


def test_the_writing_thread_writes_in_order_through_the_importing_connection():
    seen = []
    with transaction.atomic():
        outer = connection.connection

        def write(item):
            seen.append((item, threading.current_thread().name, connection.connection is outer))
            Dataset.objects.create(name=f"set-{item}")  # inside the caller's transaction

        with WriterThread(write) as writing:
            for item in range(5):
                writing.put(item)
        assert Dataset.objects.count() == 5  # the caller sees the thread's rows before any commit
    assert seen == [(item, "import-writer", True) for item in range(5)]


def test_the_gil_is_handed_over_often_while_writing_threads_run_and_as_before_after_the_last():
    before = sys.getswitchinterval()
    seen = []
    first, second = WriterThread(lambda item: seen.append(sys.getswitchinterval())), WriterThread(lambda item: None)
    with first:
        first.put(1)
        first.wait_idle()
        with second:  # a second import in the same process (another thread of a worker) overlapping
            pass
        first.put(2)  # the first one still runs with short switches after the second ended
    assert seen == [pipeline.SWITCH_INTERVAL, pipeline.SWITCH_INTERVAL] and before > pipeline.SWITCH_INTERVAL
    assert sys.getswitchinterval() == before

    with pytest.raises(ValueError), WriterThread(lambda item: (_ for _ in ()).throw(ValueError("no"))) as failing:
        failing.put(1)
    assert sys.getswitchinterval() == before  # put back after a failed write too


def test_a_write_that_fails_is_raised_in_the_reading_thread_and_nothing_after_it_is_written():
    written = []

    def write(item):
        if item == 2:
            raise ValueError("batch 2 cannot be written")
        written.append(item)

    with pytest.raises(ValueError, match="batch 2"), WriterThread(write) as writing:
        for item in range(6):
            writing.put(item)
    assert written == [0, 1]


def test_a_database_error_in_a_later_batch_rolls_the_whole_import_back(tmp_path, monkeypatch):
    path = write_jsonl(tmp_path / "calls.jsonl", [call(i) for i in range(50)])
    original, batches = StreamWriter.write, []

    def failing(self, prepared):
        batches.append(prepared.counts["conversations"])  # a reading process sends no parsed conversations
        if len(batches) == 3:
            raise IntegrityError("the third batch is refused")
        original(self, prepared)

    monkeypatch.setattr(StreamWriter, "write", failing)
    with pytest.raises(IntegrityError, match="third batch"):
        dataset_import(path=path, fmt="jsonl", dataset_name="calls", batch_size=10)

    assert batches == [10, 10, 10]
    assert not Dataset.objects.exists() and not Conversation.objects.exists() and not Turn.objects.exists()


def test_a_refused_record_still_writes_nothing_with_the_writing_thread(tmp_path):
    records = [call(i) for i in range(40)]
    records[33]["turns"][0]["audio_start_ms"] = -5
    path = write_jsonl(tmp_path / "calls.jsonl", records)

    with pytest.raises(ImportFailed) as refused:
        dataset_import(path=path, fmt="jsonl", dataset_name="calls", batch_size=10)

    assert [(e["line"], e["field"]) for e in refused.value.summary.errors] == [(34, "turns[0].audio_start_ms")]
    assert not Dataset.objects.exists() and not Turn.objects.exists() and not GoldLabel.objects.exists()


def test_foreign_keys_are_checked_at_commit_again_after_an_import(tmp_path):
    if connection.vendor != "postgresql":
        pytest.skip("SET CONSTRAINTS is PostgreSQL's")
    path = write_jsonl(tmp_path / "calls.jsonl", [call(i) for i in range(30)])
    with transaction.atomic():
        summary = dataset_import(path=path, fmt="jsonl", dataset_name="calls", batch_size=10)
        assert summary.created["turns"] == 90 and Verdict.objects.count() == 30
        missing = Conversation.objects.order_by("-id").values_list("id", flat=True)[0] + 1000
        with connection.cursor() as cursor:
            # Deferred again: a turn of a conversation that does not exist is refused only at the check.
            cursor.execute(
                "INSERT INTO reviewapp_turn (conversation_id, position, role, text, intended_text, entities, metadata)"
                " VALUES (%s, 0, 'user', '', '', '[]', '{}')",
                [missing],
            )
            with pytest.raises(IntegrityError), transaction.atomic():
                cursor.execute("SET CONSTRAINTS ALL IMMEDIATE")
            cursor.execute("DELETE FROM reviewapp_turn WHERE conversation_id = %s", [missing])


# --- the plain reader gives what the checked reader gives ------------------------------------------

PLAIN = [
    call(7),
    {
        "external_id": "fr-1",
        "language": "fr-CA",
        "metadata": {"scenario": "rebooking"},
        "channel": "phone",
        "audio": "https://audio.invalid/fr-1.wav",
        "turns": [
            {"role": "user", "text": "Bonjour", "audio_start_ms": 0, "audio_end_ms": 900, "speaker": "c-7"},
            {
                "role": "agent",
                "position": 4,
                "text": "D'accord\u00a0!",
                "intended_text": "D'accord !",
                "entities": [{"type": "date"}],
                "metadata": {"voice": "a"},
                "labels": [
                    {"judge": "tts", "passed": False, "failure_modes": [" gloss ", "", "number"], "excluded": True},
                ],
                "verdicts": [
                    {"judge": "tts", "version": "v2", "passed": True, "run_index": 1, "flags": ["x"]},
                    {"judge": "tts", "version": "v2", "status": "unresolved", "raw_text": "I am not sure"},
                ],
            },
        ],
        "labels": [{"judge": "faithful", "rating": 4.5, "label": "mostly", "metadata": {"by": "lead"}}],
        "verdicts": [{"judge": "faithful", "status": "error", "explanation": "timeout", "sub_scores": {"a": 1}}],
    },
    {
        "external_id": "nulls-1",
        "turns": [
            {"role": "user", "position": None, "text": None, "intended_text": None, "audio_start_ms": None},
            {"role": "agent", "audio_end_ms": None, "entities": None, "metadata": None, "speaker": "a"},
            {"role": "system", "metadata": {"voice": "a"}, "speaker": "b", "text": ""},
        ],
    },
]

NOT_PLAIN = [
    {"external_id": "a", "turns": [{"role": "Caller", "text": "hi"}]},  # a role alias spelled otherwise
    {"external_id": "b", "turns": [{"role": "user", "labels": [{"judge": "j", "rating": "3"}]}]},  # rating as text
    {"external_id": "c", "turns": [{"role": "user", "labels": [{"judge": " j ", "passed": True}]}]},
    {"external_id": "d", "turns": [{"role": "user", "verdicts": [{"judge": "j", "rating": 1, "model": "m"}]}]},
    {"external_id": "e", "turns": [{"role": "user", "verdicts": [{"judge": "j", "rating": 1, "status": ""}]}]},
    {"external_id": "f", "turns": [{"role": "user", "verdicts": [{"judge": "j", "passed": 1}]}]},
    {"external_id": "g", "turns": [{"role": ["user"], "text": "hi"}]},  # refused by the checked reader
    {"external_id": "h", "turns": [{"role": "user", "labels": [{"judge": "j"}]}]},  # no answer: refused
    {"external_id": "i", "turns": [{"role": "user", "position": True}]},  # a bool is no position
    {"external_id": "j", "turns": [{"role": "user", "position": -1}]},
    {"external_id": "k", "turns": [{"role": "user", "position": 2**31}]},
    {"external_id": "l", "turns": [{"role": "user"}, {"role": "agent", "position": 0}]},  # a position twice
    {"external_id": "m", "turns": [{"role": "user", "text": 5}]},
    {"external_id": "n", "turns": [{"role": "user", "intended_text": ["hi"]}]},
    {"external_id": "o", "turns": [{"role": "user", "audio_start_ms": "0"}]},
    {"external_id": "p", "turns": [{"role": "user", "audio_end_ms": 2**31}]},
    {"external_id": "q", "turns": [{"role": "user", "audio_end_ms": False}]},
    {"external_id": "r", "turns": [{"role": "user", "entities": {"type": "date"}}]},
    {"external_id": "s", "turns": [{"role": "user", "metadata": ["voice"]}]},
]


@pytest.mark.parametrize("record", PLAIN, ids=lambda r: r["external_id"])
def test_a_plain_record_is_read_by_the_plain_reader_as_the_checked_reader_reads_it(record):
    plain_header, checked_header = ParsedImport(fmt="jsonl", source="x"), ParsedImport(fmt="jsonl", source="x")

    plain = plain_conversation(json.loads(json.dumps(record)), FieldReader("x", 3), None, plain_header)
    checked = _checked_conversation(json.loads(json.dumps(record)), FieldReader("x", 3), None, checked_header)

    assert plain is not None and plain == checked
    assert plain_header.judges == checked_header.judges


def test_the_plain_reader_keeps_types_and_cleans_as_the_format_says():
    conversation = plain_conversation(PLAIN[1], FieldReader("x", 3), "en", ParsedImport(fmt="jsonl", source="x"))
    assert conversation.metadata == {
        "scenario": "rebooking",
        "channel": "phone",
        "audio": "https://audio.invalid/fr-1.wav",
    }
    assert conversation.turns[0] == ParsedTurn(0, "user", "Bonjour", "", 0, 900, [], {"speaker": "c-7"})
    assert [t.position for t in conversation.turns] == [0, 4]
    label = conversation.labels[0]
    assert (label.turn_position, label.passed, label.failure_modes, label.excluded) == (
        4,
        False,
        ["gloss", "number"],
        True,
    )
    assert type(conversation.labels[1].rating) is float and conversation.labels[1].turn_position is None
    assert [(v.version, v.status, v.problem_code) for v in conversation.verdicts] == [
        ("v2", "resolved", ""),
        ("v2", "unresolved", "hedged"),
        ("imported", "error", ""),
    ]


@pytest.mark.parametrize("record", NOT_PLAIN, ids=lambda r: r["external_id"])
def test_any_other_record_goes_the_checked_way(record):
    header = ParsedImport(fmt="jsonl", source="x")
    assert plain_conversation(record, FieldReader("x", 3), None, header) is None
    try:
        expected = _checked_conversation(record, FieldReader("x", 3), None, ParsedImport(fmt="jsonl", source="x"))
    except Exception as error:  # the checked reader's refusal is the answer
        with pytest.raises(type(error)) as raised:
            parse_conversation(record, FieldReader("x", 3), None, header)
        assert str(raised.value) == str(error)
    else:
        assert parse_conversation(record, FieldReader("x", 3), None, header) == expected


# --- COPY's text format ------------------------------------------------------------------------------


def test_copy_text_escapes_what_copy_reads_specially_and_spells_null_and_booleans():
    from datetime import UTC, datetime

    from reviewapp.corpus.importers.tables import copy_text, copy_value

    assert copy_value('a\\b\tc\nd\re "q"') == 'a\\\\b\\tc\\nd\\re "q"'
    assert [copy_value(v) for v in (None, True, False, 3, 2.5, "")] == ["\\N", "t", "f", "3", "2.5", ""]
    assert copy_value(datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)) == "2026-01-02T03:04:05+00:00"
    assert copy_text([(1, "x\ty"), (2, None)], "\tdone\n") == b"1\tx\\ty\tdone\n2\t\\N\tdone\n"
    with pytest.raises(TypeError):
        copy_value(object())


@pytest.mark.parametrize("booleans", [True, False])
def test_copy_text_spells_rows_of_strings_and_numbers_alike_with_or_without_booleans(booleans):
    from reviewapp.corpus.importers.tables import copy_text

    rows = [
        (1, "plain", 0, 2.5, ""),
        (2, "tab\there", 7, 1e20, "100%"),
        (3, "two\nlines", None, -0.5, "%s"),
        (4, "back\\slash", 9, 3.0, "cr\rend"),
        (5, "", 2**40, float("inf"), "%%d"),
    ]
    assert copy_text(rows, "\t{}\t%s\n", booleans=booleans) == (
        b"1\tplain\t0\t2.5\t\t{}\t%s\n"
        b"2\ttab\\there\t7\t1e+20\t100%\t{}\t%s\n"
        b"3\ttwo\\nlines\t\\N\t-0.5\t%s\t{}\t%s\n"
        b"4\tback\\\\slash\t9\t3.0\tcr\\rend\t{}\t%s\n"
        b"5\t\t1099511627776\tinf\t%%d\t{}\t%s\n"
    )


def test_a_text_with_tabs_newlines_and_backslashes_is_stored_as_given(tmp_path):
    text = 'line one\nline\ttwo \\ "three"\r\n'
    records = [{"external_id": "c-1", "metadata": {"path": "C:\\calls\\1"}, "turns": [{"role": "user", "text": text}]}]
    dataset_import(path=write_jsonl(tmp_path / "calls.jsonl", records), fmt="jsonl", dataset_name="calls")
    turn = Turn.objects.get()
    assert turn.text == text and turn.conversation.metadata == {"path": "C:\\calls\\1"}


def test_copy_lines_takes_a_clean_batch_whole_and_leaves_any_special_character_to_copy_text():
    from reviewapp.corpus.importers.tables import NULL_PLACEHOLDER, copy_lines

    template = "v\tv\t\\N\n"
    assert copy_lines(["1\ta b\t\\N\n", f"2\t{NULL_PLACEHOLDER}\t\\N\n"], template, 1) == b"1\ta b\t\\N\n2\t\\N\t\\N\n"
    for value in ("a\tb", "a\nb", "a\\b", "a\rb", NULL_PLACEHOLDER):
        assert copy_lines([f"1\t{value}\t\\N\n"], template, 0) is None


turn_texts = st.text(alphabet=st.sampled_from(["a", "é", " ", "\t", "\n", "\r", "\\", "N", '"', "✈"]), max_size=8)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.lists(
            st.tuples(
                st.integers(0, 4), turn_texts, turn_texts, st.none() | st.integers(0, 9), st.none() | st.integers(0, 9)
            ),
            min_size=1,
            max_size=4,
        ),
        min_size=1,
        max_size=4,
    )
)
def test_the_turn_lines_of_a_batch_are_the_copy_text_of_its_rows(conversations):
    """Written at once per turn (importers.bulk), a batch's turns are byte for byte what copy_text makes
    of their rows: the same escapes, NULLs, and the first turn at a position kept."""
    if connection.vendor != "postgresql":
        pytest.skip("COPY is PostgreSQL's")
    from reviewapp.corpus.importers.bulk import _turn_rows
    from reviewapp.corpus.importers.records import ParsedConversation

    parsed = []
    for number, turns in enumerate(conversations):
        conversation = ParsedConversation(external_id=f"c{number}", language="en", line=number + 1)
        for position, text, intended, start, end in turns:
            entities = [{"t": text}] if start == 3 else []
            conversation.turns.append(ParsedTurn(position, "user", text, intended, start, end, entities, {}))
        parsed.append(conversation)
    with transaction.atomic():
        writer = StreamWriter(header=ParsedImport(fmt="jsonl", source="x"), dataset_name="lines", source="x")
        writer.start()
        writer.ids = {"conversations": _Numbers(1000), "turns": _Numbers(5000)}
        prepared = writer.prepare(parsed)
        turn_ids = list(range(5000, 5000 + sum(len(c.turns) for c in parsed)))
        expected = writer.tables["turns"].prepare(_turn_rows(parsed, list(range(1000, 1000 + len(parsed))), turn_ids))
        assert prepared.tables["turns"] == expected
        assert prepared.counts["turns"] == expected.count(b"\n")
        transaction.set_rollback(True)


class _Numbers:
    """Ids from a counter, as IdBlock.take gives them."""

    def __init__(self, first):
        self.next = first

    def take(self, count):
        first, self.next = self.next, self.next + count
        return list(range(first, first + count))

    def close(self):
        pass
