"""Streamed imports: a bad line deep in a large file, the COPY and INSERT writers against the ORM
writer, triage after either, progress, re-imports across batches, and the orjson reader's refusals."""

import json

import pytest
from django.db import connection
from hypothesis import given, settings
from hypothesis import strategies as st

from reviewapp.corpus.importers import parse_path
from reviewapp.corpus.importers.strict import fast_loads
from reviewapp.corpus.importers.writer import write_parsed
from reviewapp.corpus.services.imports import ImportFailed, dataset_import
from reviewapp.models import Conversation, Dataset, GoldLabel, Judge, JudgeVersion, ReviewItem, Sweep, Turn, Verdict
from reviewapp.triage.services.triage import triage_run
from scoring.strictjson import StrictJSONError, strict_loads
from tests.factories import store_judge

pytestmark = pytest.mark.django_db

METHODS = ["insert", "copy"]


def needs(method):
    if method == "copy" and connection.vendor != "postgresql":
        pytest.skip("COPY is PostgreSQL's")


def record(i, *, turns=3):
    """A conversation whose last turn carries a gold label and a verdict (every third one disagrees)."""
    items = [{"role": "agent" if t % 2 == 0 else "user", "text": f"turn {t} of call {i}"} for t in range(turns)]
    gold = 1 + i % 3
    items[-1]["labels"] = [{"judge": "helpful", "rating": gold}]
    items[-1]["verdicts"] = [{"judge": "helpful", "version": "v1", "rating": gold if i % 3 else 1 + gold % 3}]
    return {"external_id": f"call-{i:05d}", "language": "en", "turns": items}


def varied_records():
    """Records that touch every column and the less common shapes the readers accept."""
    return [
        {
            "external_id": "fr-1",
            "language": "fr-CA",
            "metadata": {"scenario": "rebooking", "big": 123456789012345678901234567890, "nested": {"b": 1, "a": 2}},
            "channel": "phone",
            "audio": "https://audio.invalid/fr-1.wav",
            "turns": [
                {
                    "role": "Caller",
                    "text": "Bonjour : je voudrais changer mon vol",
                    "audio_start_ms": 0,
                    "audio_end_ms": 900,
                    "speaker": "c-7",
                    "entities": [{"type": "date", "value": "mardi"}],
                },
                {
                    "role": "assistant",
                    "text": "D'accord\u00a0! <b>Votre</b> vol ✈",
                    "intended_text": "D'accord !",
                    "metadata": {"tts": "v2"},
                    "position": 4,
                    "labels": [{"judge": "helpful", "rating": 2, "failure_modes": "gloss, truncation"}],
                    "verdicts": [
                        {
                            "judge": "helpful",
                            "version": "v1",
                            "rating": 3,
                            "explanation": "Fine.",
                            "sub_scores": {"x": 1},
                        },
                        {"judge": "helpful", "version": "v1", "run_index": 1, "rating": 1, "flags": ["late"]},
                        {"judge": "helpful", "version": "v2", "passed": False, "label": "bad", "extra_field": 5},
                    ],
                },
            ],
            "labels": [{"judge": "tone", "passed": True, "excluded": True, "metadata": {"why": "test"}}],
            "verdicts": [
                {"judge": "tone", "version": "v1", "status": "unresolved", "raw_text": "I am not sure, maybe."}
            ],
        },
        {
            "external_id": "en-2",
            "turns": [
                {"role": "user", "text": None, "audio_start_ms": "12", "metadata": '{"k": 1}'},
                {"role": " AGENT ", "text": 42, "verdicts": [{"judge": "helpful", "version": "v1", "rating": 2.5}]},
            ],
        },
        *[record(i) for i in range(7)],
    ]


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def stored(model, *related, without=(), **filters):
    """Every column of the rows but the id, created_at and `without`, in the model's order; `related`
    (such as "turn__position") stand first, in place of the foreign keys they go through."""
    through = {name.split("__")[0] for name in related}
    left_out = {"id", "created_at", *through, *without}
    columns = [f.name for f in model._meta.concrete_fields if f.name not in left_out]
    return sorted(model.objects.filter(**filters).values_list(*related, *columns), key=repr)


def rows_of(dataset_name):
    """Everything an import wrote for a dataset, without ids, in a stable order."""
    filters = {"conversation__dataset__name": dataset_name}
    conversations = sorted(
        Conversation.objects.filter(dataset__name=dataset_name).values_list("external_id", "language", "metadata")
    )
    turns = stored(Turn, "conversation__external_id", **filters)
    labels = stored(GoldLabel, "judge__slug", "conversation__external_id", "turn__position", **filters)
    verdicts = stored(
        Verdict,
        "judge_version__judge__slug",
        "judge_version__version",
        "conversation__external_id",
        "turn__position",
        without=["sweep"],  # the sweep is compared below
        **filters,
    )
    sweep = Sweep.objects.get(dataset__name=dataset_name, kind=Sweep.Kind.IMPORT)
    sweep_row = (
        sweep.status,
        sweep.total_targets,
        sweep.verdicts_written,
        sorted(sweep.judge_versions.values_list("judge__slug", "version")),
    )
    return conversations, turns, labels, verdicts, sweep_row


def legacy_import(path, name):
    """The writer as it was: the whole file parsed, then one ORM bulk write."""
    from django.db import transaction

    parsed = parse_path(path, fmt="jsonl")
    assert not parsed.errors
    with transaction.atomic():
        write_parsed(parsed, dataset_name=name, source=f"jsonl:{path}")


def test_a_bad_line_deep_in_a_large_file_writes_nothing_and_is_named(tmp_path):
    records = [record(i) for i in range(3000)]
    records[2716]["turns"][1]["role"] = "robot"  # line 2717
    path = write_jsonl(tmp_path / "large.jsonl", records)
    with path.open("a", encoding="utf-8") as handle:  # and a line that is not JSON at all, further down
        handle.write('{"external_id": "broken", "turns": [\n')

    with pytest.raises(ImportFailed) as refused:
        dataset_import(path=path, fmt="jsonl", dataset_name="large", batch_size=250)

    errors = refused.value.summary.errors
    assert [(e["file"], e["line"], e["field"]) for e in errors] == [
        ("large.jsonl", 2717, "turns[1].role"),
        ("large.jsonl", 3001, "(line)"),
    ]
    assert "expected one of user, agent" in errors[0]["message"] and "robot" in errors[0]["message"]
    assert str(refused.value).startswith("large.jsonl line 2717 field turns[1].role: expected one of")
    # 2716 good conversations came before the bad line: 10 batches were written, then rolled back.
    assert refused.value.summary.conversations == 2999
    assert not Dataset.objects.exists() and not Conversation.objects.exists() and not Turn.objects.exists()
    assert not Verdict.objects.exists() and not GoldLabel.objects.exists() and not Sweep.objects.exists()
    assert not Judge.objects.exists() and not JudgeVersion.objects.exists()


@pytest.mark.parametrize("method", METHODS)
def test_the_streaming_writer_writes_the_rows_the_orm_writer_writes(tmp_path, method):
    needs(method)
    path = write_jsonl(tmp_path / "varied.jsonl", varied_records())
    legacy_import(path, "legacy")

    summary = dataset_import(path=path, fmt="jsonl", dataset_name="streamed", method=method, batch_size=4)

    assert summary.created == {
        "dataset": 1,
        "judges": 0,
        "judge_versions": 0,
        "sweeps": 1,
        "conversations": 9,
        "turns": 25,
        "labels": 9,
        "verdicts": 12,
    }
    streamed, legacy = rows_of("streamed"), rows_of("legacy")
    assert streamed == legacy
    conversations, turns, _, verdicts, sweep = streamed
    assert conversations[-1] == (
        "fr-1",
        "fr-CA",
        {
            "scenario": "rebooking",
            "big": 123456789012345678901234567890,
            "nested": {"b": 1, "a": 2},
            "audio": "https://audio.invalid/fr-1.wav",
            "channel": "phone",
        },
    )
    assert ("en-2", 0, "user", "", "", 12, None, [], {"k": 1}) in turns
    assert ("en-2", 1, "agent", "42", "", None, None, [], {}) in turns
    assert (
        "tone",
        "v1",
        "fr-1",
        None,
        None,
        "",
        None,
        0,
        "imported",
        "unresolved",
        [],
        {},
        "",
        "I am not sure, maybe.",
        "hedged",
        {},
        None,
        None,
    ) in verdicts
    assert sweep == ("done", 12, 12, [("helpful", "v1"), ("helpful", "v2"), ("tone", "v1")])
    assert Dataset.objects.get(name="streamed").kind == Dataset.objects.get(name="legacy").kind == "validation"


def test_copy_and_insert_write_identical_rows(tmp_path):
    if connection.vendor != "postgresql":
        pytest.skip("COPY is PostgreSQL's")
    path = write_jsonl(tmp_path / "varied.jsonl", varied_records())
    dataset_import(path=path, fmt="jsonl", dataset_name="by-copy", method="copy", batch_size=3)
    dataset_import(path=path, fmt="jsonl", dataset_name="by-insert", method="insert", batch_size=3)
    by_copy, by_insert = rows_of("by-copy"), rows_of("by-insert")
    assert by_copy == by_insert
    assert len(by_copy[1]) == 25 and len(by_copy[3]) == 12


@pytest.mark.parametrize("method", METHODS)
def test_triage_after_a_streamed_import_queues_what_it_queued_after_the_orm_writer(tmp_path, method):
    needs(method)
    # Triage needs the judges' specs: the imported version labels name stored versions of shipped judges.
    store_judge("conciseness")
    store_judge("conciseness", version="2.0")
    store_judge("faithfulness")
    text = json.dumps(varied_records(), ensure_ascii=False)
    for imported, stored in (
        ('"helpful"', '"conciseness"'),
        ('"tone"', '"faithfulness"'),
        ('"v1"', '"1.0"'),
        ('"v2"', '"2.0"'),
    ):
        text = text.replace(imported, stored)
    path = write_jsonl(tmp_path / "varied.jsonl", json.loads(text))
    legacy_import(path, "legacy")
    dataset_import(path=path, fmt="jsonl", dataset_name="streamed", method=method, batch_size=2)

    def queue(name):
        triage_run(sweep=Sweep.objects.get(dataset__name=name, kind=Sweep.Kind.IMPORT), qa_rate=0.0)
        return sorted(
            ReviewItem.objects.filter(dataset__name=name).values_list(
                "judge__slug",
                "conversation__external_id",
                "turn__position",
                "language",
                "reasons",
                "priority",
                "status",
                "reviews_required",
                "sample_weight",
            ),
            key=repr,
        )

    streamed, legacy = queue("streamed"), queue("legacy")
    assert streamed == legacy
    by_target = {(slug, conversation, position): reasons for slug, conversation, position, _, reasons, *_ in streamed}
    assert set(by_target[("conciseness", "fr-1", 4)]) >= {"runs_disagree"}
    assert set(by_target[("faithfulness", "fr-1", None)]) >= {"unresolved", "uncertain"}


def test_progress_is_reported_batch_by_batch_as_the_file_is_read(tmp_path):
    path = write_jsonl(tmp_path / "calls.jsonl", [record(i) for i in range(400)])
    seen = []

    summary = dataset_import(
        path=path, fmt="jsonl", dataset_name="calls", batch_size=100, progress=lambda s, p: seen.append((s, p))
    )

    assert summary.created["conversations"] == 400
    assert seen[0] == ("reading and checking every record", 10)
    assert [stage for stage, _ in seen[1:]] == [
        f"writing: {n} conversations and {3 * n} turns so far" for n in (100, 200, 300, 400)
    ]
    percents = [percent for _, percent in seen]
    assert percents == sorted(percents) and 10 < percents[1] < percents[-1] == 95


def test_a_new_file_into_an_existing_dataset_over_several_batches(tmp_path):
    first = write_jsonl(tmp_path / "first.jsonl", [record(i) for i in range(5)])
    second = write_jsonl(tmp_path / "second.jsonl", [record(i) for i in range(3, 12)])
    dataset_import(path=first, fmt="jsonl", dataset_name="calls")

    summary = dataset_import(path=second, fmt="jsonl", dataset_name="calls", batch_size=2)
    again = dataset_import(path=second, fmt="jsonl", dataset_name="calls", batch_size=4)

    assert (summary.created["conversations"], summary.created["turns"], summary.created["verdicts"]) == (7, 21, 9)
    assert summary.created["sweeps"] == 1 and summary.created["dataset"] == 0
    assert {key: value for key, value in again.created.items() if value} == {}
    sweep = Sweep.objects.get(dataset__name="calls", params__content_sha256__isnull=False, total_targets=9)
    # Conversations 3 and 4 were already there, but their verdicts in this file belong to its own sweep.
    assert sweep.verdicts_written == 9
    assert list(sweep.judge_versions.values_list("version", flat=True)) == ["v1"]
    assert Conversation.objects.filter(dataset__name="calls").count() == 12


def test_a_repeated_external_id_is_refused_or_skipped_never_written_twice(tmp_path):
    first, again = record(1), record(1)
    again["turns"][0]["text"] = "a second record with the same id"
    path = write_jsonl(tmp_path / "twice.jsonl", [first, again])

    with pytest.raises(ImportFailed) as refused:
        dataset_import(path=path, fmt="jsonl", dataset_name="twice")
    assert refused.value.summary.errors[0]["line"] == 2 and refused.value.summary.errors[0]["field"] == "external_id"

    summary = dataset_import(path=path, fmt="jsonl", dataset_name="twice", skip_invalid=True)
    assert summary.created["conversations"] == 1
    assert Turn.objects.get(conversation__external_id="call-00001", position=0).text == "turn 0 of call 1"


# --- the orjson reader refuses what the strict reader refuses, and reads the rest alike ---------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4),
    max_leaves=20,
)


def outcome(loads, text):
    try:
        return ("value", repr(loads(text)))
    except StrictJSONError as error:
        return ("refused", error.code, error.path)


@settings(max_examples=300, deadline=None)
@given(json_values, st.sampled_from([(",", ":"), (", ", ": "), (" , ", " : ")]))
def test_fast_loads_reads_what_strict_loads_reads(value, separators):
    text = json.dumps(value, separators=separators, ensure_ascii=False)
    assert outcome(fast_loads, text) == outcome(strict_loads, text)


@pytest.mark.parametrize(
    "text",
    [
        '{"a":1,"a":2}',
        '{"a" :1,"a":2}',
        '{"a":"x","a":"\\u0022:"}',
        '{"a":"\\"","a":1}',
        '{"a" : "x" , "a" : "y"}',
        '{"a":"\\u0022\\u0022","a":1}',
        '{"a":"\\u0022","b":"\\""}',
        '{"q":"say \\"hi\\"","r":["\\"",{"s":"\\""}]}',
        '{"t":"Bonjour : oui", "t":1}',
        '{"a":{"b":[{"c":1,"c":1}]}}',
        '{"a":"\\u0000"}',
        '{"a":"\\udc00"}',
        '{"n":1e400}',
        '{"n":NaN}',
        '{"n":12345678901234567890123}',
        '{"n":-9223372036854775809}',
        "[" * 70 + "]" * 70,
        '{"a":1,}',
        '"\\\\":1',
    ],
)
def test_fast_loads_refuses_and_keeps_exactly_as_strict_loads(text):
    assert outcome(fast_loads, text) == outcome(strict_loads, text)
