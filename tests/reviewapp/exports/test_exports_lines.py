"""On PostgreSQL the database writes the JSONL lines itself (export_sql.postgres_lines_statement): they
are the lines the row path writes (export_flat.flat_rows through the JSONL writer), byte for byte,
for the values either could spell differently, and the datasheet counts them the same."""

import hashlib
import io
import itertools
import json
import os
from itertools import groupby
from pathlib import Path

import pytest
from django.db import connection

from reviewapp.exports.selectors.export_filters import ExportFilters
from reviewapp.exports.selectors.export_flat import flat_rows
from reviewapp.exports.services import export_parallel
from reviewapp.exports.services.export_writers import JsonlWriter
from reviewapp.exports.services.exports import snapshot_create, snapshot_path, snapshot_write
from reviewapp.models import Adjudication, Comment, Dataset, ExportSnapshot, GoldLabel, Review, Sweep, Turn, Verdict
from tests.factories import SweepFactory, VerdictFactory
from tests.reviewapp.exports.test_exports_rows import hmac_id
from tests.scenarios import add_labelled

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the database writes the lines on PostgreSQL only"),
]


def awkward(corpus) -> None:
    """Values each spelled by its own rule: floats outside fixed notation and non-finite ones,
    failure modes that are not a list of strings, escapes in text and in names, empty and null."""
    Dataset.objects.filter(pk=corpus.dataset.pk).update(name='calls\t"2026"\\q')
    turn = Turn.objects.get(conversation=corpus.fr, position=1)
    Turn.objects.filter(pk=turn.pk).update(text='a "quote", a \\ back\nslash\ttab \u2028 \x01 é 🎧', intended_text="")
    Turn.objects.filter(conversation=corpus.fr, position__in=[0, 3]).update(text='looks like a marker: "\\u0000p1"')
    GoldLabel.objects.filter(turn=turn, source="adjudicated").update(rating=float("nan"), failure_modes={"b": 1})
    GoldLabel.objects.filter(turn__conversation=corpus.fr, turn__position=3).update(rating=1e-7, failure_modes="ab")
    GoldLabel.objects.filter(turn__conversation=corpus.ja).update(rating=-0.0, failure_modes=['x"y', "z\\"])
    first, second = Review.objects.filter(item__turn=turn).order_by("id")
    Review.objects.filter(pk=first.pk).update(rating=float("inf"), comment="")
    Review.objects.filter(pk=second.pk).update(rating=1e20, label="très\\bien", passed=None)
    Adjudication.objects.filter(item__turn=turn).update(rating=2.5)
    Verdict.objects.filter(turn=turn, judge_version=corpus.v1).update(rating=123456.789, flags={"z": [1.50, None]})
    Verdict.objects.filter(turn=turn, judge_version=corpus.v2).update(rating=None, flags=["long"], explanation="")
    Comment.objects.create(turn=turn, author=corpus.reviewers[1], judge=None, body="second", parent=None)


def row_path_lines(judge, filters: ExportFilters | None = None) -> bytes:
    """The same export as rows (the statement CSV and Parquet read) through the JSONL writer."""
    handle = io.BytesIO()
    writer = JsonlWriter(handle)
    for chunk in flat_rows(judge=judge, filters=filters or ExportFilters()):
        for row in chunk:
            writer.write(row)
    return handle.getvalue()


def test_the_database_writes_the_lines_of_the_row_path_byte_for_byte(corpus, media):
    awkward(corpus)
    snapshot = snapshot_write(snapshot_id=snapshot_create(judge=corpus.judge, fmt="jsonl", build=False).pk)
    written = snapshot_path(snapshot).read_bytes()

    first = json.loads(written.splitlines()[0])
    assert first["dataset"] == 'calls\t"2026"\\q' and first["gold_rating"] is None
    assert first["gold_failure_modes"] == ["b"] and first["intended_text"] is None
    assert [(r["reviewer"], r["rating"]) for r in first["reviews"]] == [
        (hmac_id(corpus.reviewers[0]), None),
        (hmac_id(corpus.reviewers[1]), 1e20),
    ]
    assert first["verdicts"]["1.0"][0]["flags"] == {"z": [1.5, None]}
    assert snapshot.datasheet["non_finite_values_written_as_null"] == 2
    assert written == row_path_lines(corpus.judge)


def test_the_datasheet_counts_the_lines_as_the_rows(corpus, media):
    awkward(corpus)
    sheets = {}
    for fmt in ("jsonl", "csv"):  # the database's lines, and rows through the CSV writer
        snapshot = snapshot_write(snapshot_id=snapshot_create(judge=corpus.judge, fmt=fmt, build=False).pk)
        sheets[fmt] = snapshot.datasheet
    for key in ("rows", "counts", "judge_versions", "non_finite_values_written_as_null"):
        assert sheets["jsonl"][key] == sheets["csv"][key], key
    assert sheets["jsonl"]["counts"]["by_dataset"] == {'calls\t"2026"\\q': 3}


def test_verdicts_are_written_by_version_sweep_and_run_whatever_order_they_were_stored_in(corpus, media):
    turn = Turn.objects.get(conversation=corpus.fr, position=1)
    first_sweep = Sweep.objects.get(verdicts__turn=turn, verdicts__judge_version=corpus.v1)
    later_sweep = SweepFactory(kind=Sweep.Kind.SWEEP, dataset=corpus.dataset)
    for sweep, version, run in (
        (later_sweep, corpus.v2, 1), (later_sweep, corpus.v1, 1), (later_sweep, corpus.v1, 0), (first_sweep, corpus.v1, 1),
    ):  # fmt: skip
        VerdictFactory(sweep=sweep, judge_version=version, turn=turn, tier="llm", run_index=run)
    snapshot = snapshot_write(snapshot_id=snapshot_create(judge=corpus.judge, fmt="jsonl", build=False).pk)
    written = snapshot_path(snapshot).read_bytes()

    verdicts = json.loads(written.splitlines()[0])["verdicts"]
    assert list(verdicts) == ["1.0", "2.0"]
    assert [(v["sweep"], v["run"]) for v in verdicts["1.0"]] == [
        (first_sweep.pk, 0), (first_sweep.pk, 1), (later_sweep.pk, 0), (later_sweep.pk, 1),
    ]  # fmt: skip
    assert [(v["sweep"], v["run"]) for v in verdicts["2.0"]] == [(first_sweep.pk, 0), (later_sweep.pk, 1)]
    assert written == row_path_lines(corpus.judge)


def test_roles_tiers_and_statuses_outside_their_choices_are_escaped_as_any_text(corpus, media):
    turn = Turn.objects.get(conversation=corpus.fr, position=1)
    Turn.objects.filter(conversation=corpus.fr, position=0).update(role='nar"rator\\')
    Turn.objects.filter(pk=turn.pk).update(role="")
    Verdict.objects.filter(turn=turn, judge_version=corpus.v1).update(tier="llm\n", status='re"solved')
    snapshot = snapshot_write(snapshot_id=snapshot_create(judge=corpus.judge, fmt="jsonl", build=False).pk)
    written = snapshot_path(snapshot).read_bytes()

    first = json.loads(written.splitlines()[0])
    assert first["turn_role"] == "" and first["context"][0]["role"] == 'nar"rator\\'
    assert (first["verdicts"]["1.0"][0]["tier"], first["verdicts"]["1.0"][0]["status"]) == ("llm\n", 're"solved')
    assert b'"role":"nar\\"rator\\\\"' in written and b'"tier":"llm\\n"' in written
    assert written == row_path_lines(corpus.judge)


@pytest.mark.parametrize("per_message", [1, 3])
def test_lines_sent_several_conversations_a_message_are_the_lines_of_the_row_path(
    corpus, media, monkeypatch, per_message
):
    awkward(corpus)
    add_labelled(corpus, 9)
    monkeypatch.setattr("reviewapp.exports.selectors.export_sql.CONVERSATIONS_PER_BLOCK", per_message)
    snapshot = snapshot_write(
        snapshot_id=snapshot_create(judge=corpus.judge, fmt="jsonl", build=False).pk, chunk_size=2
    )
    written = snapshot_path(snapshot).read_bytes()

    assert snapshot.row_count == len(written.splitlines()) == 12
    assert [json.loads(line)["conversation_id"] for line in written.splitlines()[:3]] == ["fr-1", "fr-1", "ja-1"]
    assert written == row_path_lines(corpus.judge)
    assert snapshot.datasheet["counts"]["by_language"] == {"fr-CA": 2, "ja": 1, "en": 9}


@pytest.mark.parametrize("chunk_size", [1, 2, 5, 7, 12, 100])
def test_chunks_hold_exactly_their_lines_whether_they_end_inside_a_block_or_at_its_end(corpus, media, chunk_size):
    """A block's lines go into a chunk as they come, and are split only where a chunk ends inside
    it: every chunk holds `chunk_size` lines and their keys (the last what is left), whatever the
    blocks hold (here 12 rows, up to 16 conversations a block), and together they are the file."""
    from reviewapp.exports.selectors.export_flat import postgres_lines
    from reviewapp.exports.services.export_writers import NonFinite

    awkward(corpus)
    add_labelled(corpus, 9)
    chunks = list(
        postgres_lines(judge=corpus.judge, filters=ExportFilters(), finite=NonFinite(), chunk_size=chunk_size)
    )
    sizes = [body.count(b"\n") for body, _ in chunks]
    assert sizes == [chunk_size] * (12 // chunk_size) + ([12 % chunk_size] if 12 % chunk_size else [])
    assert [len(keys) for _, keys in chunks] == sizes
    assert all(body.endswith(b"\n") for body, _ in chunks)
    assert b"".join(body for body, _ in chunks) == row_path_lines(corpus.judge)
    keys = [json.loads(key) for _, chunk_keys in chunks for key in chunk_keys]
    languages = [json.loads(line)["language"] for line in row_path_lines(corpus.judge).splitlines()]
    assert [key[0] for key in keys] == languages  # each key beside its own line


@pytest.mark.parametrize(("chunk_bytes", "chunk_size"), [(1, 100), (1, 1), (2**40, 100)])
def test_a_chunk_ends_with_the_block_that_brings_it_to_its_byte_budget(
    corpus, media, monkeypatch, chunk_bytes, chunk_size
):
    """Besides `chunk_size` lines, a chunk holds about `chunk_bytes` of them: it ends with the whole
    block that reaches the budget, never inside one. With one conversation a block and a budget of
    one byte every block is a chunk of its own; `chunk_size` still splits where it falls; a budget
    never reached changes nothing. The chunks are the file, each key beside its line."""
    from reviewapp.exports.selectors.export_flat import postgres_lines
    from reviewapp.exports.services.export_writers import NonFinite

    awkward(corpus)
    add_labelled(corpus, 9)
    monkeypatch.setattr("reviewapp.exports.selectors.export_sql.CONVERSATIONS_PER_BLOCK", 1)
    lines = row_path_lines(corpus.judge).splitlines(keepends=True)
    # the lines of each conversation (a block), in the file's order
    per_conversation = [
        len(list(run)) for _, run in groupby(lines, key=lambda line: json.loads(line)["conversation_id"])
    ]
    assert per_conversation[:2] == [2, 1] and len(per_conversation) == 11  # fr-1's two turns, ja-1's one, nine

    chunks = list(
        postgres_lines(
            judge=corpus.judge, filters=ExportFilters(), finite=NonFinite(), chunk_size=chunk_size,
            chunk_bytes=chunk_bytes,
        )
    )  # fmt: skip

    expected = {(1, 100): per_conversation, (1, 1): [1] * 12, (2**40, 100): [12]}[(chunk_bytes, chunk_size)]
    assert [body.count(b"\n") for body, _ in chunks] == expected
    assert [len(keys) for _, keys in chunks] == expected
    assert b"".join(body for body, _ in chunks) == b"".join(lines)
    keys = [json.loads(key) for _, chunk_keys in chunks for key in chunk_keys]
    assert [key[0] for key in keys] == [json.loads(line)["language"] for line in lines]


def test_the_database_writes_the_parquet_table_of_the_row_path(corpus, media, tmp_path):
    import pyarrow.parquet as pq

    from reviewapp.exports.services.export_writers import ParquetWriter

    awkward(corpus)
    # A pass/fail gold label each way (PostgreSQL's text of a boolean is "true", COPY's "t").
    GoldLabel.objects.filter(judge=corpus.judge, conversation=corpus.ja).update(passed=True)
    GoldLabel.objects.filter(judge=corpus.judge, conversation=corpus.fr).update(passed=False)
    snapshot = snapshot_write(snapshot_id=snapshot_create(judge=corpus.judge, fmt="parquet", build=False).pk)
    rows_path = tmp_path / "rows.parquet"
    writer = ParquetWriter(rows_path)  # the same export as rows through the Parquet writer
    for chunk in flat_rows(judge=corpus.judge, filters=ExportFilters()):
        for row in chunk:
            writer.write(row)
    writer.close()

    written, expected = pq.read_table(snapshot_path(snapshot)), pq.read_table(rows_path)
    assert written.schema == expected.schema
    assert written.to_pylist() == expected.to_pylist()
    first = written.slice(0, 1).to_pylist()[0]
    assert first["dataset"] == 'calls\t"2026"\\q' and first["gold_rating"] is None and first["intended_text"] is None
    assert json.loads(first["reviews"])[0]["reviewer"] == hmac_id(corpus.reviewers[0])
    assert snapshot.datasheet["non_finite_values_written_as_null"] == writer.finite.count == 2
    assert {row["gold_passed"] for row in written.to_pylist()} == {True, False}


def halves_and_whole(corpus, fmt: str, monkeypatch) -> tuple[ExportSnapshot, ExportSnapshot]:
    """The same export read whole, then in two halves (every row group of two rows)."""
    monkeypatch.setattr("reviewapp.exports.services.exports.PARQUET_ROW_GROUP", 2)
    whole = snapshot_write(snapshot_id=snapshot_create(judge=corpus.judge, fmt=fmt, build=False).pk)
    monkeypatch.setattr("reviewapp.exports.services.export_parallel.SPLIT_FROM_ROWS", 2)
    split = snapshot_write(snapshot_id=snapshot_create(judge=corpus.judge, fmt=fmt, build=False).pk)
    return whole, split


@pytest.mark.django_db(transaction=True)
def test_an_export_read_in_two_halves_is_the_same_file(corpus, media, monkeypatch):
    awkward(corpus)
    add_labelled(corpus, 9)
    read = []
    original = export_parallel._snapshot_connection
    monkeypatch.setattr(
        "reviewapp.exports.services.export_parallel._snapshot_connection",
        lambda snapshot=None: read.append(snapshot) or original(snapshot),
    )

    whole, split = halves_and_whole(corpus, "jsonl", monkeypatch)

    assert len(read) == 2 and read[0] is None and read[1]  # one exported snapshot, imported by the second
    assert split.row_count == whole.row_count == 12
    assert snapshot_path(split).read_bytes() == snapshot_path(whole).read_bytes()
    # hashed as written (the second half as it is appended), not read back: the file's own hash
    assert split.sha256 == whole.sha256 == hashlib.sha256(snapshot_path(split).read_bytes()).hexdigest()
    assert split.datasheet["sha256"] == split.sha256
    for key in ("rows", "counts", "judge_versions", "non_finite_values_written_as_null"):
        assert split.datasheet[key] == whole.datasheet[key], key
    assert sorted(path.name for path in (Path(media) / "exports").iterdir() if ".partial" in path.name) == []


@pytest.mark.skipif(not hasattr(os, "posix_fadvise") or not Path("/proc/self/fd").is_dir(), reason="Linux advice")
@pytest.mark.django_db(transaction=True)
def test_a_file_whose_pages_are_released_as_it_grows_is_the_same_file_and_hash(corpus, media, monkeypatch):
    """Past its size for it, the JSONL file is advised out of the page cache window by window
    (`ReleasingFile`), the second half's spool (read back to be appended) is not; the file and its
    hash are unchanged."""
    awkward(corpus)
    add_labelled(corpus, 9)
    plain = snapshot_write(snapshot_id=snapshot_create(judge=corpus.judge, fmt="jsonl", build=False).pk)
    advised: list[str] = []
    real = os.posix_fadvise

    def record(fd, offset, length, kind):
        advised.append(os.readlink(f"/proc/self/fd/{fd}"))
        return real(fd, offset, length, kind)

    monkeypatch.setattr("reviewapp.exports.services.export_writers.RELEASE_WINDOW", 512)
    monkeypatch.setattr("reviewapp.exports.services.export_writers.RELEASE_AFTER", 2048)
    monkeypatch.setattr("reviewapp.exports.services.export_writers.os.posix_fadvise", record)

    whole, split = halves_and_whole(corpus, "jsonl", monkeypatch)

    assert advised and {Path(name).suffix for name in advised} == {".partial"}  # the file, never the spool
    assert snapshot_path(split).read_bytes() == snapshot_path(whole).read_bytes() == snapshot_path(plain).read_bytes()
    assert snapshot_path(whole).read_bytes() == row_path_lines(corpus.judge)
    assert split.sha256 == whole.sha256 == plain.sha256 == hashlib.sha256(snapshot_path(split).read_bytes()).hexdigest()


@pytest.mark.django_db(transaction=True)
def test_halves_that_split_the_conversations_of_one_message_are_the_same_file(corpus, media, monkeypatch):
    awkward(corpus)
    add_labelled(corpus, 9)
    monkeypatch.setattr("reviewapp.exports.selectors.export_sql.CONVERSATIONS_PER_BLOCK", 1000)  # one message, or two

    whole, split = halves_and_whole(corpus, "jsonl", monkeypatch)

    assert split.row_count == whole.row_count == 12
    assert snapshot_path(split).read_bytes() == snapshot_path(whole).read_bytes() == row_path_lines(corpus.judge)
    assert split.datasheet["counts"] == whole.datasheet["counts"]


@pytest.mark.django_db(transaction=True)
def test_a_parquet_export_read_in_two_halves_is_the_same_table_and_row_groups(corpus, media, monkeypatch):
    import pyarrow.parquet as pq

    awkward(corpus)
    add_labelled(corpus, 9)
    before = snapshot_write(snapshot_id=snapshot_create(judge=corpus.judge, fmt="parquet", build=False).pk)
    # Non-finite ratings in the second half too (its own tables, parsed in its thread and spooled
    # as Arrow): a verdict's (a marker Python fills) and a gold label's (NULL, its key counts it).
    last = GoldLabel.objects.filter(judge=corpus.judge).order_by("-conversation_id").first()
    GoldLabel.objects.filter(pk=last.pk).update(rating=float("nan"))
    Verdict.objects.filter(turn_id=last.turn_id).update(rating=float("-inf"))

    whole, split = halves_and_whole(corpus, "parquet", monkeypatch)

    written, expected = pq.ParquetFile(snapshot_path(split)), pq.ParquetFile(snapshot_path(whole))
    assert written.read().to_pylist() == expected.read().to_pylist()
    assert written.metadata.num_rows == 12 and written.metadata.num_row_groups == expected.metadata.num_row_groups == 6
    assert snapshot_path(split).read_bytes() == snapshot_path(whole).read_bytes()
    assert split.datasheet["non_finite_values_written_as_null"] == whole.datasheet["non_finite_values_written_as_null"]
    # awkward's, and the last row's two
    assert (
        whole.datasheet["non_finite_values_written_as_null"]
        == before.datasheet["non_finite_values_written_as_null"] + 2
    )
    assert split.datasheet["counts"] == whole.datasheet["counts"]


@pytest.mark.django_db(transaction=True)
def test_parquet_row_groups_cut_by_bytes_are_the_same_read_whole_in_halves_or_in_small_pieces(
    corpus, media, monkeypatch
):
    """A row group ends at 10,000 rows or before the row that would take it past
    export_writers.PARQUET_GROUP_BYTES: where depends on the rows alone, so the file is the same
    read in one piece, in two halves (split in the middle of a group), or parsed a conversation at
    a time (export_sql.CONVERSATIONS_PER_BLOCK, exports.PARQUET_PIECE_BYTES)."""
    import pyarrow.parquet as pq

    from reviewapp.exports.services import export_writers, exports

    awkward(corpus)
    add_labelled(corpus, 9)
    monkeypatch.setattr(export_writers, "PARQUET_GROUP_BYTES", 2500)

    def written() -> bytes:
        snapshot = snapshot_write(snapshot_id=snapshot_create(judge=corpus.judge, fmt="parquet", build=False).pk)
        assert snapshot.row_count == 12
        return snapshot_path(snapshot).read_bytes()

    whole = written()
    metadata = pq.ParquetFile(io.BytesIO(whole)).metadata
    groups = [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]
    assert sum(groups) == 12 and 1 < len(groups) < 12 and len(set(groups)) > 1  # bytes decide, unevenly
    read = []
    original = export_parallel._snapshot_connection
    monkeypatch.setattr(
        export_parallel, "_snapshot_connection", lambda snapshot=None: read.append(snapshot) or original(snapshot)
    )
    monkeypatch.setattr(export_parallel, "SPLIT_FROM_ROWS", 2)
    assert written() == whole and len(read) == 2  # halves at row 6
    assert 6 not in itertools.accumulate(groups)  # a group spans the two halves
    monkeypatch.setattr("reviewapp.exports.selectors.export_sql.CONVERSATIONS_PER_BLOCK", 1)
    monkeypatch.setattr(exports, "PARQUET_PIECE_BYTES", 1)
    assert written() == whole  # halves parsed a conversation at a time
    monkeypatch.setattr(export_parallel, "SPLIT_FROM_ROWS", 1000)
    read.clear()
    assert written() == whole and not read  # one piece, a conversation at a time


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("half", ["first", "second"])
def test_a_half_failing_marks_the_snapshot_failed_and_leaves_no_file(corpus, media, monkeypatch, half):
    add_labelled(corpus, 9)
    monkeypatch.setattr("reviewapp.exports.services.export_parallel.SPLIT_FROM_ROWS", 2)

    def full_disk(self, lines):
        second = self.handle.name.endswith(".second")  # the second half is written beside the file
        if second == (half == "second"):
            raise OSError(f"disk full in the {half} half")
        self.handle.write(lines)

    monkeypatch.setattr(JsonlWriter, "write_lines", full_disk)
    snapshot = snapshot_create(judge=corpus.judge, fmt="jsonl", build=False)
    with pytest.raises(OSError, match=f"disk full in the {half} half"):
        snapshot_write(snapshot_id=snapshot.pk, chunk_size=1)
    snapshot.refresh_from_db()
    assert snapshot.status == "failed" and half in snapshot.error
    assert list((Path(media) / "exports").iterdir()) == []
