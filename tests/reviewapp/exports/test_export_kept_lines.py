"""Kept export lines (ExportLine, exports.services.export_lines): a JSONL export reads a row's kept
line when it is current, and gives the same bytes as building every row; every change a line draws
on makes the lines it touches stale in the same transaction (migration 0018's triggers), so the next
export builds them again instead of writing an old line."""

import io
import json
import random
import tempfile
from itertools import groupby
from pathlib import Path

import pytest
from django.db import connection

from reviewapp.exports.selectors.export_filters import ExportFilters, export_target_count
from reviewapp.exports.selectors.export_flat import flat_rows, postgres_kept_share
from reviewapp.exports.services import export_lines
from reviewapp.exports.services.export_writers import ParquetWriter
from reviewapp.exports.services.exports import ONE_READ_FROM_KEPT_SHARE, snapshot_create, snapshot_path, snapshot_write
from reviewapp.models import (
    Adjudication,
    Category,
    Comment,
    Conversation,
    Dataset,
    ExportBlock,
    ExportGeneration,
    ExportLine,
    ExportLineState,
    GoldLabel,
    JudgeVersion,
    Review,
    Turn,
    Verdict,
)
from tests.reviewapp.exports.test_exports_lines import awkward, row_path_lines

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="lines are kept on PostgreSQL only"),
]


@pytest.fixture(autouse=True)
def conversations_from_a_block_start(transactional_db):
    """The next conversation id starts a block of sixteen (export_sql.CONVERSATIONS_PER_BLOCK), so that
    the corpus's two conversations share one, whatever ids the tests before took from the sequence.
    (Autouse: created before the corpus.)"""
    from reviewapp.exports.selectors.export_sql import CONVERSATIONS_PER_BLOCK as per

    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_get_serial_sequence('reviewapp_conversation', 'id')")
        sequence = cursor.fetchone()[0]
        cursor.execute("SELECT nextval(%s)", [sequence])
        cursor.execute("SELECT setval(%s, %s, false)", [sequence, (cursor.fetchone()[0] // per + 1) * per])


def exported(judge, fmt: str = "jsonl") -> bytes:
    snapshot = snapshot_write(snapshot_id=snapshot_create(judge=judge, fmt=fmt, build=False).pk)
    return snapshot_path(snapshot).read_bytes()


def parquet_rows(data: bytes) -> list[dict]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    return pq.read_table(pa.BufferReader(data)).to_pylist()


def row_path_parquet(judge, filters: ExportFilters | None = None) -> list[dict]:
    """The Parquet export's rows as the row path builds them (every row from the data, by Python)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    sink = io.BytesIO()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "rows.parquet"
        writer = ParquetWriter(path)
        for chunk in flat_rows(judge=judge, filters=filters or ExportFilters()):
            for row in chunk:
                writer.write(row)
        writer.close()
        sink.write(path.read_bytes())
    return pq.read_table(pa.BufferReader(sink.getvalue())).to_pylist()


def test_kept_lines_are_read_and_give_the_bytes_of_building_every_row(corpus, media):
    awkward(corpus)
    built, built_parquet = exported(corpus.judge), exported(corpus.judge, "parquet")
    assert not ExportLine.objects.exists()

    done = export_lines.refresh(corpus.judge)
    rows = built.count(b"\n")
    assert done.ran and done.built == rows == ExportLine.objects.count()
    assert exported(corpus.judge) == built == row_path_lines(corpus.judge)
    assert exported(corpus.judge, "parquet") == built_parquet  # the same file, read from the kept rows
    assert parquet_rows(built_parquet) == row_path_parquet(corpus.judge)
    assert export_lines.refresh(corpus.judge).built == 0  # all current: nothing to build again

    # The export reads what is kept (changed in the tables by nothing the triggers watch): the JSONL
    # export a block's joined lines, and a kept line where its block is not kept.
    assert done.blocks == ExportBlock.objects.count() == 1  # the corpus's conversations share one block
    block = ExportBlock.objects.get()
    kept_lines = block.lines.split("\n")  # the kept lines in the export's order (markers not filled in)
    assert len(kept_lines) == rows and sorted(kept_lines) == sorted(ExportLine.objects.values_list("line", flat=True))
    ExportBlock.objects.filter(pk=block.pk).update(lines=block.lines.replace(kept_lines[0], '{"block":true}', 1))
    assert exported(corpus.judge).startswith(b'{"block":true}\n')
    ExportBlock.objects.all().delete()
    kept = ExportLine.objects.order_by("gold_id").first()
    ExportLine.objects.filter(pk=kept.pk).update(line='{"kept":true}')
    assert b'{"kept":true}\n' in exported(corpus.judge)
    columns = kept.columns.replace('"turn"', '"kept"', 1)  # the level column of the kept row
    assert columns != kept.columns
    ExportLine.objects.filter(pk=kept.pk).update(columns=columns)
    assert "kept" in {row["level"] for row in parquet_rows(exported(corpus.judge, "parquet"))}


def _turn_text(corpus):
    Turn.objects.filter(conversation=corpus.fr, position=0).update(text="An earlier turn, edited.")


def _review_rating(corpus):
    review = Review.objects.filter(item__conversation=corpus.fr).order_by("id").first()
    Review.objects.filter(pk=review.pk).update(rating=3)


def _review_categories(corpus):
    Review.objects.filter(item__conversation=corpus.fr).order_by("id").first().categories.clear()


def _adjudication_gone(corpus):
    Adjudication.objects.filter(item__conversation=corpus.fr).delete()


def _comment(corpus):
    turn = Turn.objects.filter(conversation=corpus.fr, position=1).get()
    Comment.objects.create(turn=turn, author=corpus.reviewers[0], judge=corpus.judge, body="A new comment.")


def _category_slug(corpus):
    Category.objects.filter(slug="gloss").update(slug="gloss-renamed")


def _dataset_name(corpus):
    Dataset.objects.filter(pk=corpus.dataset.pk).update(name="renamed")


def _version_name(corpus):
    JudgeVersion.objects.filter(pk=corpus.v1.pk).update(version="1.0-renamed")


def _verdict(corpus):
    Verdict.objects.filter(conversation=corpus.fr).update(explanation="Explained again.")


def _verdict_gone(corpus):
    Verdict.objects.filter(conversation=corpus.fr, judge_version=corpus.v2).delete()


def _gold(corpus):
    GoldLabel.objects.filter(conversation=corpus.fr).update(label="relabelled")


def _judge_slug(corpus):
    type(corpus.judge).objects.filter(pk=corpus.judge.pk).update(slug="renamed-judge")
    corpus.judge.refresh_from_db()


def _truncate(corpus):
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE reviewapp_comment_categories")


CHANGES = [
    _turn_text, _review_rating, _review_categories, _adjudication_gone, _comment, _category_slug, _dataset_name,
    _version_name, _verdict, _verdict_gone, _gold, _judge_slug, _truncate,
]  # fmt: skip


@pytest.mark.parametrize("change", CHANGES, ids=lambda change: change.__name__.strip("_"))
def test_a_change_a_line_draws_on_is_never_written_from_an_old_line(corpus, media, change):
    awkward(corpus)
    Comment.objects.first().categories.add(Category.objects.get(slug="gloss"))
    before, before_parquet = exported(corpus.judge), exported(corpus.judge, "parquet")
    assert export_lines.refresh(corpus.judge).built == before.count(b"\n")

    change(corpus)

    after, after_parquet = exported(corpus.judge), exported(corpus.judge, "parquet")
    assert after != before  # the change shows in the export
    assert after == row_path_lines(corpus.judge)  # as built from the data, row by row
    assert after_parquet != before_parquet and parquet_rows(after_parquet) == row_path_parquet(corpus.judge)
    # The refresh sees that something changed (ExportLineState) and builds the stale lines again.
    assert export_lines.refresh(corpus.judge).built > 0
    assert exported(corpus.judge) == after
    assert exported(corpus.judge, "parquet") == after_parquet


def test_a_change_elsewhere_keeps_the_other_conversations_lines(corpus, media):
    awkward(corpus)
    export_lines.refresh(corpus.judge)
    _review_rating(corpus)
    rebuilt = export_lines.refresh(corpus.judge).built
    assert rebuilt == ExportLine.objects.filter(conversation_id=corpus.fr.pk).count()
    assert 0 < rebuilt < ExportLine.objects.count()


def test_a_refresh_waits_for_an_open_transaction_and_builds_nothing_when_it_stays_open(corpus, media):
    from django.db import connections

    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            cursor.execute("SELECT count(*) FROM reviewapp_turn")  # holds a snapshot from before the refresh
            done = export_lines.refresh(corpus.judge, wait_seconds=0.3)
            assert not done.ran and done.built == 0 and "open" in done.reason
            assert not ExportLine.objects.exists()
            cursor.execute("COMMIT")
    finally:
        other.close()
    assert export_lines.refresh(corpus.judge).ran


def test_a_refresh_waits_for_a_transaction_that_wrote_before_it(corpus, media):
    """A writer in READ COMMITTED holds no snapshot between its statements, but its change is not yet
    committed: the refresh waits for its transaction (by its id), not only for old snapshots."""
    from django.db import connections

    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute("BEGIN")
            cursor.execute("UPDATE reviewapp_dataset SET description = description WHERE id = %s", [corpus.dataset.pk])
            done = export_lines.refresh(corpus.judge, wait_seconds=0.3)
            assert not done.ran and not ExportLine.objects.exists()
            cursor.execute("COMMIT")
    finally:
        other.close()
    assert export_lines.refresh(corpus.judge).ran


def test_a_transaction_in_another_database_of_the_cluster_does_not_hold_a_refresh_back(corpus, media):
    import psycopg

    params = connection.get_connection_params()
    params["dbname"] = "postgres"
    params.pop("cursor_factory", None)
    params.pop("context", None)
    with psycopg.connect(**params) as elsewhere:
        elsewhere.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
        elsewhere.execute("SELECT pg_current_xact_id()")  # an id and a snapshot, both older than the refresh
        done = export_lines.refresh(corpus.judge, wait_seconds=0.3)
        elsewhere.execute("ROLLBACK")
    assert done.ran and done.built == ExportLine.objects.count() > 0


@pytest.mark.parametrize("fmt", ["jsonl", "parquet"])
def test_the_export_task_keeps_its_lines_once_the_file_is_written(corpus, media, fmt):
    from reviewapp.exports.tasks.exports import snapshot_build

    result = snapshot_build(snapshot_create(judge=corpus.judge, fmt=fmt, build=False).pk)
    assert result["status"] == "done" and ExportLine.objects.count() == result["rows"] == 3


def test_the_other_formats_keep_no_lines(corpus, media):
    from reviewapp.exports.tasks.exports import snapshot_build

    for fmt in ("csv", "eva"):
        assert snapshot_build(snapshot_create(judge=corpus.judge, fmt=fmt, build=False).pk)["status"] == "done"
    assert not ExportLine.objects.exists()


def test_generations_that_go_and_come_back_do_not_bring_old_lines_back(corpus, media):
    before = exported(corpus.judge)
    export_lines.refresh(corpus.judge)
    _review_rating(corpus)  # fr's lines are now a generation behind
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM reviewapp_exportgeneration")
    export_lines.refresh(corpus.judge)  # the rows come back at 0, where fr's old lines were built
    after = exported(corpus.judge)
    assert after != before and after == row_path_lines(corpus.judge)


def test_the_first_refresh_looks_each_line_up_by_its_index_not_by_scanning_the_table_it_fills(corpus, media):
    """The INSERT that keeps the lines reads the table it fills. Planned while the table is empty (the
    first refresh, or after a TRUNCATE) a scan looks free, and would run once per row over the growing
    table: 216 s for 100,000 lines in the benchmark instead of 5. The refresh's plan uses the index."""
    awkward(corpus)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE reviewapp_exportline")  # the statistics of an empty table
    plans = []

    def explain_first(execute, sql, params, many, context):
        if sql.startswith("WITH g AS") and "INSERT INTO reviewapp_exportline" in sql:
            with context["connection"].connection.cursor() as raw:
                raw.execute("EXPLAIN " + sql, params)
                plans.append("\n".join(row[0] for row in raw.fetchall()))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(explain_first):
        done = export_lines.refresh(corpus.judge)
    assert done.built and plans
    for plan in plans:
        assert "reviewapp_exportline_pkey on reviewapp_exportline" in plan
        assert "Seq Scan on reviewapp_exportline" not in plan


def _import_file(path) -> None:
    from reviewapp.corpus.tasks.imports import import_file

    assert import_file(str(path), "jsonl", "imported")["conversations"] == 5


def _import_job(path) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    from reviewapp.corpus.services.import_jobs import import_job_start
    from reviewapp.corpus.tasks.import_jobs import import_job_task

    upload = SimpleUploadedFile("imported.jsonl", path.read_bytes())
    job = import_job_start(user=None, upload=upload, dataset_name="imported", dispatch=import_job_task)
    job.refresh_from_db()
    assert job.status == "done", job.errors


def _import_command(path) -> None:
    from django.core.management import call_command

    out = io.StringIO()
    call_command("import_data", str(path), fmt="jsonl", dataset_name="imported", stdout=out)
    assert json.loads(out.getvalue())["conversations"] == 5


@pytest.mark.parametrize("run_import", [_import_file, _import_job, _import_command], ids=["task", "job", "command"])
def test_an_import_keeps_the_lines_of_what_it_brought(corpus, media, tmp_path, run_import, settings, eager_celery):
    """The import tasks keep the new gold labels' lines once the import is done, so the first export of
    them reads kept lines."""
    import json

    settings.TRIBUNAL_UPLOAD_DIR = str(tmp_path / "uploads")

    records = [
        {
            "external_id": f"imported-{number}",
            "language": "fr",
            "turns": [
                {"role": "user", "text": "Bonjour ?"},
                {"role": "agent", "text": f"Réponse {number}.", "labels": [{"judge": corpus.judge.slug, "rating": 2}]},
            ],
        }
        for number in range(5)
    ]
    path = tmp_path / "imported.jsonl"
    path.write_text("".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records), encoding="utf-8")

    run_import(path)

    imported = GoldLabel.objects.filter(conversation__dataset__name="imported")
    assert imported.count() == 5
    # Every row of the judge's export is kept: the five new ones and the corpus's own.
    kept = set(ExportLine.objects.values_list("gold_id", flat=True))
    assert set(imported.values_list("pk", flat=True)) <= kept
    built = row_path_lines(corpus.judge)
    assert len(kept) == built.count(b"\n") and exported(corpus.judge) == built
    assert export_lines.refresh(corpus.judge).built == 0  # all current already


def test_the_export_command_keeps_its_rows_unless_told_not_to(corpus, media, tmp_path):
    from django.core.management import call_command

    out = io.StringIO()
    call_command(
        "export_dataset",
        judge=corpus.judge.slug,
        fmt="parquet",
        out=str(tmp_path / "a"),
        no_keep_lines=True,
        stdout=out,
    )
    assert not ExportLine.objects.exists()
    call_command("export_dataset", judge=corpus.judge.slug, fmt="parquet", out=str(tmp_path / "b"), stdout=out)
    rows = [json.loads(line)["rows"] for line in out.getvalue().splitlines()]
    assert rows == [3, 3] and ExportLine.objects.count() == 3
    assert (tmp_path / "a").read_bytes() == (tmp_path / "b").read_bytes()


def test_a_finished_sweep_keeps_the_rows_its_verdicts_made_stale(corpus, media, scripted_llm, run_sweep):
    """A sweep's verdicts move the generations of the conversations it judged; the call that closes it
    queues the keeping of their rows again, so the next export reads them as well."""
    from tests.factories import store_judge

    export_lines.refresh(corpus.judge)
    before = exported(corpus.judge)
    version = store_judge("conciseness", version="3.0")  # the shipped spec as a new version of the judge
    assert version.judge_id == corpus.judge.pk

    sweep = run_sweep(dataset=corpus.dataset, judge_versions=[version], qa_sample=0)

    assert sweep.status == "done" and Verdict.objects.filter(sweep=sweep).exists()
    assert export_lines.refresh(corpus.judge).built == 0  # already kept again by the sweep's close
    after = exported(corpus.judge)
    assert after != before and after == row_path_lines(corpus.judge)


def _rename_dataset(corpus) -> None:
    Dataset.objects.filter(pk=corpus.dataset.pk).update(name="renamed")


def test_the_periodic_keep_brings_stale_rows_back_to_current_and_builds_nothing_when_all_are(corpus, media, settings):
    """What no hook keeps at once (here a rename, which makes every line stale through the epoch) is
    kept again by Celery beat's periodic task; a second run finds everything current."""
    from reviewapp.celery import app
    from reviewapp.exports.tasks.exports import export_lines_keep_current

    schedule = settings.CELERY_BEAT_SCHEDULE["export-lines-keep"]
    assert schedule["task"] in app.tasks and schedule["schedule"] == settings.TRIBUNAL_EXPORT_LINES_KEEP_SECONDS
    assert export_lines_keep_current() == {"built": {}, "skipped": {}}  # no judge keeps lines yet
    awkward(corpus)
    rows = export_lines.refresh(corpus.judge).built
    assert rows == ExportLine.objects.count() > 0
    assert export_lines_keep_current() == {"built": {corpus.judge.slug: 0}, "skipped": {}}

    _rename_dataset(corpus)
    assert export_lines_keep_current() == {"built": {corpus.judge.slug: rows}, "skipped": {}}
    assert export_lines.refresh(corpus.judge).built == 0
    assert exported(corpus.judge) == row_path_lines(corpus.judge) and b"renamed" in exported(corpus.judge)


def test_a_refresh_with_nothing_changed_stops_at_one_statement_and_anything_that_changed_is_built(
    corpus, media, django_assert_num_queries
):
    """A refresh first compares what the lines stand on (ExportLineState) with what it was when they
    were last brought current: the same, and it stops there (the lock, that statement, the unlock)
    instead of walking every gold label; a new conversation's gold label, a table of lines emptied,
    or a write held open while it read are all built."""
    from django.db import connections

    awkward(corpus)
    rows = export_lines.refresh(corpus.judge).built
    assert rows == ExportLine.objects.count() > 0 and ExportLineState.objects.filter(judge_id=corpus.judge.pk).exists()
    with django_assert_num_queries(3):
        done = export_lines.refresh(corpus.judge)
    assert done.ran and done.built == 0 and done.reason == "nothing changed since the last refresh"

    # A gold label of a conversation that had none (no generation row: no trigger moves anything).
    conversation = Conversation.objects.create(dataset=corpus.dataset, external_id="late", language="en")
    turn = Turn.objects.create(conversation=conversation, position=0, role="agent", text="Late.")
    GoldLabel.objects.create(judge=corpus.judge, conversation=conversation, turn=turn, source="imported", label="ok")
    assert export_lines.refresh(corpus.judge).built == 1
    assert export_lines.refresh(corpus.judge).reason == "nothing changed since the last refresh"
    assert exported(corpus.judge) == row_path_lines(corpus.judge) and b'"Late."' in exported(corpus.judge)

    # The kept rows emptied under it (by hand, or by a restore without them): the state is not trusted.
    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE reviewapp_exportline")
    assert export_lines.refresh(corpus.judge).built == rows + 1

    # A label written but not committed while the refresh reads: nothing committed changed, so nothing
    # is built; its commit changes what the next refresh reads, which builds it.
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute("BEGIN")
            cursor.execute("UPDATE reviewapp_goldlabel SET label = 'held' WHERE conversation_id = %s", [corpus.fr.pk])
            assert (
                export_lines.refresh(corpus.judge, wait_seconds=0.3).reason == "nothing changed since the last refresh"
            )
            cursor.execute("COMMIT")
    finally:
        other.close()
    assert export_lines.refresh(corpus.judge).built == ExportLine.objects.filter(conversation_id=corpus.fr.pk).count()
    assert exported(corpus.judge) == row_path_lines(corpus.judge) and b'"held"' in exported(corpus.judge)
    assert export_lines.refresh(corpus.judge).built == 0


def test_a_change_to_another_judges_conversations_costs_one_more_statement_not_a_walk(
    corpus, media, django_assert_num_queries
):
    """Every conversation's generations moved, but none of this judge's: the refresh reads its own
    conversations' generations (one join), builds nothing, and takes what moved as its new baseline;
    a change to its own conversations, or a gold label moved to another conversation, is built."""
    from tests.factories import GoldLabelFactory, JudgeFactory
    from tests.scenarios import turn_pair

    awkward(corpus)
    other = JudgeFactory(slug="faithfulness")
    theirs = Conversation.objects.create(dataset=corpus.dataset, external_id="other-1", language="fr")
    their_turn = turn_pair(theirs, 0, "Votre colis arrive vendredi.")
    GoldLabelFactory(judge=other, turn=their_turn, source="imported", rating=2)
    rows = export_lines.refresh(corpus.judge).built
    assert export_lines.refresh(other).built == 1  # and its conversation's generation row: a new one
    assert export_lines.refresh(corpus.judge).reason == export_lines.OTHERS_CHANGED
    with django_assert_num_queries(3):
        assert export_lines.refresh(corpus.judge).reason == export_lines.UNCHANGED

    Turn.objects.filter(pk=their_turn.pk).update(text="Votre colis arrive lundi.")  # the other judge's data
    with django_assert_num_queries(5):  # the lock, the state, this judge's generations, the new baseline, unlock
        done = export_lines.refresh(corpus.judge)
    assert done.ran and done.built == 0 and done.reason == export_lines.OTHERS_CHANGED
    with django_assert_num_queries(3):
        assert export_lines.refresh(corpus.judge).reason == export_lines.UNCHANGED
    assert export_lines.refresh(other).built == 1  # the other judge's refresh builds its changed row
    assert b"lundi" in exported(other) and exported(corpus.judge) == row_path_lines(corpus.judge)

    Turn.objects.filter(conversation=corpus.ja).update(text="ご確認ください。")  # this judge's own data
    Turn.objects.filter(conversation=corpus.ja).update(intended_text="ご確認ください")  # (two generations)
    assert export_lines.refresh(corpus.judge).built == ExportLine.objects.filter(conversation_id=corpus.ja.pk).count()

    # One of this judge's gold labels moved to the other judge's conversation: its row is built. The
    # other conversation's generation is set one short of this one's (forward, as a trigger moves it):
    # the move moves both on by one, so this judge's conversations count and sum the same before and
    # after. The gold labels' own part (each id times its conversation) tells the move.
    label = GoldLabel.objects.filter(judge=corpus.judge, turn__conversation=corpus.ja).get()
    own = ExportGeneration.objects.get(conversation_id=corpus.ja.pk).generation
    assert ExportGeneration.objects.get(conversation_id=theirs.pk).generation < own - 1
    ExportGeneration.objects.filter(conversation_id=theirs.pk).update(generation=own - 1)
    GoldLabel.objects.filter(pk=label.pk).update(conversation=theirs, turn=their_turn)
    assert export_lines.refresh(corpus.judge).built == 1
    assert exported(corpus.judge) == row_path_lines(corpus.judge) and b"lundi" in exported(corpus.judge)
    assert ExportLine.objects.filter(judge_id=corpus.judge.pk).count() == rows


def _kept() -> list[tuple]:
    return list(ExportLine.objects.order_by("gold_id").values_list("gold_id", "key", "line", "columns", "generation"))


def _blocks() -> list[tuple]:
    return list(
        ExportBlock.objects.order_by("judge_id", "block").values_list("block", "golds", "keys", "lines", "rows")
    )


def test_a_large_refresh_builds_in_two_parts_at_once_and_keeps_the_same_rows(corpus, media, monkeypatch):
    """From SPLIT_FROM_LABELS gold labels a second part builds on a connection of its own, each part
    taking the next batch as it is done with one, building its lines and then composing its blocks;
    here every block (of a few conversations) is a batch, so both parts build several. The batches
    start on a block's first conversation: each block is composed once, whole. The rows and blocks
    are those of one part building all."""
    import threading

    from tests.scenarios import add_labelled

    add_labelled(corpus, 10)
    awkward(corpus)
    per = 3
    monkeypatch.setattr("reviewapp.exports.selectors.export_sql.CONVERSATIONS_PER_BLOCK", per)
    export_lines.refresh(corpus.judge)
    whole, blocks = _kept(), _blocks()
    ExportLine.objects.all().delete()
    ExportBlock.objects.all().delete()

    monkeypatch.setattr(export_lines, "SPLIT_FROM_LABELS", 1)
    monkeypatch.setattr(export_lines, "CONVERSATIONS_PER_BATCH", per)
    parts, handed = [], []
    started = export_lines._Part.start
    monkeypatch.setattr(export_lines._Part, "start", lambda part: (parts.append(part), started(part)))
    given = export_lines._Batches.next
    monkeypatch.setattr(export_lines._Batches, "next", lambda batches: (handed.append(b := given(batches)), b)[1])
    done = export_lines.refresh(corpus.judge)
    assert len(parts) == 1  # one second part, for the lines and the blocks
    assert 0 < parts[0].built < done.built == len(whole) and 0 < parts[0].composed < done.blocks == len(blocks) > 1
    starts = [batch[0] for batch in handed if batch is not None]
    assert len(starts) == len(set(starts)) and handed.count(None) == 2  # each batch once; then None to each part
    assert all(start % per == 0 for start in starts)  # whole blocks
    assert _kept() == whole and _blocks() == blocks
    assert exported(corpus.judge) == row_path_lines(corpus.judge)
    assert not any(thread.name == "export-lines-part" for thread in threading.enumerate())


def test_each_batch_composes_its_blocks_right_after_its_lines_and_what_is_gone_goes_last(corpus, media, monkeypatch):
    """An export during a keep reads the blocks of the batches already done: a batch's blocks are
    composed right after its lines, not once every line is built; the scans for lines and blocks
    whose gold labels are gone run after the last batch."""
    from tests.scenarios import add_labelled

    add_labelled(corpus, 12)
    export_lines.refresh(corpus.judge)
    ExportLineState.objects.all().delete()
    ExportLine.objects.exclude(pk=ExportLine.objects.order_by("pk").last().pk).delete()  # one left: the scan runs
    ExportBlock.objects.all().delete()
    monkeypatch.setattr("reviewapp.exports.selectors.export_sql.CONVERSATIONS_PER_BLOCK", 2)
    monkeypatch.setattr(export_lines, "CONVERSATIONS_PER_BATCH", 4)  # two blocks a batch
    steps = []
    lines, composed = export_lines._build_between, export_lines._build_blocks

    def build_lines(cursor, judge, first, end):
        steps.append(("lines", first, ExportBlock.objects.count()))
        return lines(cursor, judge, first, end)

    def build_blocks(cursor, judge, first, end):
        count = composed(cursor, judge, first, end)
        steps.append(("blocks", first, ExportBlock.objects.count()))
        return count

    def record(execute, sql, params, many, context):
        if sql.startswith("DELETE FROM reviewapp_export"):
            steps.append(("delete", sql.split()[2], ExportBlock.objects.count()))
        return execute(sql, params, many, context)

    monkeypatch.setattr(export_lines, "_build_between", build_lines)
    monkeypatch.setattr(export_lines, "_build_blocks", build_blocks)
    with connection.execute_wrapper(record):
        done = export_lines.refresh(corpus.judge)
    batches = [first for kind, first, _ in steps if kind == "lines"]
    assert len(batches) > 1 and done.blocks > 1
    kinds = [kind for kind, _, _ in steps]
    assert kinds[: 2 * len(batches)] == ["lines", "blocks"] * len(batches)
    assert [first for kind, first, _ in steps if kind == "blocks"] == batches  # each batch's own blocks
    assert steps[1][2] > 0 and steps[2][2] == steps[1][2]  # the first batch's blocks exist while the next is built
    assert kinds[2 * len(batches) :] == ["delete", "delete"]
    assert [table for kind, table, _ in steps if kind == "delete"] == ["reviewapp_exportline", "reviewapp_exportblock"]
    assert exported(corpus.judge) == row_path_lines(corpus.judge)


def test_both_parts_build_when_the_stale_rows_are_all_past_the_kept_ones(corpus, media, monkeypatch):
    """What an import leaves: its conversations, all with ids past the kept ones, are the stale rows.
    A split at the median gold label gave them all to one part while the other had nothing to do;
    taken batch by batch, both build them."""
    import threading
    import time

    from tests.scenarios import add_labelled

    add_labelled(corpus, 12)
    export_lines.refresh(corpus.judge)
    conversations = sorted(set(GoldLabel.objects.filter(judge=corpus.judge).values_list("conversation_id", flat=True)))
    upper = conversations[len(conversations) // 2 :]
    ExportLine.objects.filter(conversation_id__in=upper).delete()
    ExportBlock.objects.all().delete()
    ExportLineState.objects.all().delete()
    monkeypatch.setattr(export_lines, "SPLIT_FROM_LABELS", 1)
    monkeypatch.setattr(export_lines, "CONVERSATIONS_PER_BATCH", 1)  # a batch of one block of one
    monkeypatch.setattr("reviewapp.exports.selectors.export_sql.CONVERSATIONS_PER_BLOCK", 1)
    built, given = export_lines._build_batches, export_lines._Batches.next
    by_thread: dict[str, int] = {}

    def after_a_pause(batches):  # a part building a batch takes time: the other takes the next
        batch = given(batches)
        time.sleep(0.05)
        return batch

    def counted(cursor, judge, batches, stop=None):
        count = built(cursor, judge, batches, stop)
        by_thread[threading.current_thread().name] = count[0]
        return count

    monkeypatch.setattr(export_lines._Batches, "next", after_a_pause)
    monkeypatch.setattr(export_lines, "_build_batches", counted)
    done = export_lines.refresh(corpus.judge)
    assert done.built == GoldLabel.objects.filter(judge=corpus.judge, conversation_id__in=upper).count()
    assert set(by_thread) == {"MainThread", "export-lines-part"} and all(by_thread.values()), by_thread
    assert exported(corpus.judge) == row_path_lines(corpus.judge)


def test_the_batches_are_the_windows_of_ids_that_hold_a_gold_label_of_the_judge(corpus, media, monkeypatch):
    """A judge whose labels are spread over many ids is not a statement per empty window: the
    batches are the windows (of CONVERSATIONS_PER_BATCH ids) holding a gold label of the judge,
    each once, in order; the rows kept are all of them."""
    from tests.factories import ConversationFactory
    from tests.scenarios import add_labelled

    add_labelled(corpus, 3)
    for number in range(5):  # conversations with no gold label of the judge, between labelled ones
        ConversationFactory(dataset=corpus.dataset, external_id=f"unlabelled-{number}", language="en")
    add_labelled(corpus, 3)
    monkeypatch.setattr("reviewapp.exports.selectors.export_sql.CONVERSATIONS_PER_BLOCK", 2)
    monkeypatch.setattr(export_lines, "CONVERSATIONS_PER_BATCH", 2)
    labelled = set(GoldLabel.objects.filter(judge=corpus.judge).values_list("conversation_id", flat=True))
    ids = range(min(labelled), max(labelled) + 1)
    windows = sorted({conversation // 2 * 2 for conversation in labelled})
    assert len(windows) < len({conversation // 2 * 2 for conversation in ids})  # some windows hold none
    handed = []
    given = export_lines._Batches.next
    monkeypatch.setattr(export_lines._Batches, "next", lambda batches: (handed.append(b := given(batches)), b)[1])
    done = export_lines.refresh(corpus.judge)
    assert handed == [(start, start + 2) for start in windows] + [None]
    assert done.built == len(exported(corpus.judge).splitlines())
    assert exported(corpus.judge) == row_path_lines(corpus.judge)


def test_a_part_that_fails_stops_the_refresh_and_is_raised(corpus, media, monkeypatch):
    import threading

    from django.db import DatabaseError

    from tests.scenarios import add_labelled

    add_labelled(corpus, 6)
    monkeypatch.setattr(export_lines, "SPLIT_FROM_LABELS", 1)
    monkeypatch.setattr(export_lines, "CONVERSATIONS_PER_BATCH", 1)
    monkeypatch.setattr("reviewapp.exports.selectors.export_sql.CONVERSATIONS_PER_BLOCK", 1)
    build = export_lines._build_batches

    def failing_second_part(cursor, judge, batches, stop=None):
        if threading.current_thread().name == "export-lines-part":
            raise DatabaseError("the second part failed")
        return build(cursor, judge, batches, stop)

    monkeypatch.setattr(export_lines, "_build_batches", failing_second_part)
    with pytest.raises(DatabaseError, match="the second part failed"):
        export_lines.refresh(corpus.judge)
    assert not ExportLineState.objects.exists()  # not recorded as current: the next refresh builds the rest
    monkeypatch.setattr(export_lines, "_build_batches", build)
    assert export_lines.refresh(corpus.judge).built > 0
    assert exported(corpus.judge) == row_path_lines(corpus.judge)


def _lock_released(judge, timeout: float = 10.0) -> None:
    """Wait until the server has let the advisory lock go: a closed connection's backend ends, and its
    locks with it, a moment after the client has left."""
    import time

    deadline = time.monotonic() + timeout
    with connection.cursor() as cursor:
        while True:
            cursor.execute(
                "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND classid = %s AND objid = %s",
                [export_lines.LOCK_CLASS, judge.pk],
            )
            if not cursor.fetchone()[0]:
                return
            assert time.monotonic() < deadline, "the refresh lock was not released"
            time.sleep(0.02)


def _hold_refresh_lock(judge):
    from django.db import connections

    other = connections.create_connection("default")
    with other.cursor() as cursor:
        cursor.execute("SELECT pg_advisory_lock(%s, %s)", [export_lines.LOCK_CLASS, judge.pk])
    return other


def test_one_refresh_of_a_judge_at_a_time_the_periodic_keep_skips_a_busy_judge(corpus, media):
    from reviewapp.exports.tasks.exports import export_lines_keep_current

    export_lines.refresh(corpus.judge)
    _rename_dataset(corpus)
    other = _hold_refresh_lock(corpus.judge)  # a refresh of this judge is running elsewhere
    try:
        result = export_lines_keep_current()
        assert result == {
            "built": {corpus.judge.slug: 0},
            "skipped": {corpus.judge.slug: "another refresh of this judge is running"},
        }
    finally:
        other.close()  # its session ends: the lock goes with it
    _lock_released(corpus.judge)
    assert export_lines_keep_current()["built"] == {corpus.judge.slug: ExportLine.objects.count()}


def test_a_refresh_waits_for_the_one_running_and_then_builds(corpus, media):
    """What an import or a sweep queues waits for a refresh already running (which may have started
    before its writes), then builds what is still stale. The waiting one polls: a statement blocked
    on the lock would hold a snapshot the running refresh waits to see gone."""
    import threading

    from django.db import connections

    export_lines.refresh(corpus.judge)
    _rename_dataset(corpus)
    other = _hold_refresh_lock(corpus.judge)
    results = []

    def run():
        try:
            results.append(export_lines.refresh(corpus.judge, wait_seconds=5))
        finally:
            connections.close_all()

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(0.6)
    assert thread.is_alive() and not results  # waiting for the lock
    other.close()
    thread.join(10)
    assert not thread.is_alive()
    assert results[0].ran and results[0].built == ExportLine.objects.count() and results[0].seconds >= 0.6


def test_kept_rows_are_compressed_with_lz4_where_the_server_has_it(corpus, media):
    with connection.cursor() as cursor:
        cursor.execute("SELECT 'lz4' = ANY(enumvals) FROM pg_settings WHERE name = 'default_toast_compression'")
        if not cursor.fetchone()[0]:
            pytest.skip("this PostgreSQL was built without lz4")
        cursor.execute(
            "SELECT attname, attcompression FROM pg_attribute WHERE attrelid = 'reviewapp_exportline'::regclass"
            " AND attname IN ('key', 'line', 'columns') ORDER BY attname"
        )
        assert cursor.fetchall() == [("columns", "l"), ("key", "l"), ("line", "l")]
        cursor.execute(
            "SELECT attname, attcompression FROM pg_attribute WHERE attrelid = 'reviewapp_exportblock'::regclass"
            " AND attname IN ('keys', 'lines', 'columns') ORDER BY attname"
        )
        assert cursor.fetchall() == [("columns", "l"), ("keys", "l"), ("lines", "l")]
        awkward(corpus)
        Turn.objects.filter(conversation__dataset=corpus.dataset).update(text="Une réponse assez longue. " * 200)
        export_lines.refresh(corpus.judge)
        cursor.execute("SELECT DISTINCT pg_column_compression(line) FROM reviewapp_exportline")
        assert cursor.fetchall() == [("lz4",)]
        cursor.execute("SELECT DISTINCT pg_column_compression(columns) FROM reviewapp_exportblock")
        assert cursor.fetchall() == [("lz4",)]


def _prose(seed: int, words: int) -> str:
    """Words that compress about as a transcript does (less than twice), not a repeated phrase."""
    vocabulary = [
        *("votre", "commande", "est", "partie", "hier", "matin", "et", "arrivera", "vendredi", "avant", "midi"),
        *("si", "le", "transporteur", "confirme", "le", "créneau", "je", "peux", "vous", "envoyer", "le"),
        *("numéro", "de", "suivi", "par", "message", "ou", "par", "courriel", "merci", "de", "patienter"),
        *("un", "instant", "pendant", "que", "je", "vérifie", "les", "détails", "du", "compte"),
    ]
    chooser = random.Random(seed)
    return " ".join(chooser.choice(vocabulary) for _ in range(words))


def _kept_layout() -> tuple[int, int, bool, int]:
    """Kept rows; the longest line's length, and whether its line and CSV row are both compressed;
    rows in the TOAST table."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT (SELECT count(*) FROM reviewapp_exportline), octet_length(line), pg_column_compression(line)"
            " IS NOT NULL AND pg_column_compression(columns) IS NOT NULL FROM reviewapp_exportline"
            " ORDER BY octet_length(line) DESC LIMIT 1"
        )
        rows, longest, compressed = cursor.fetchone()
        cursor.execute(
            "SELECT reltoastrelid::regclass::text FROM pg_class WHERE oid = 'reviewapp_exportline'::regclass"
        )
        cursor.execute(f"SELECT count(*) FROM {cursor.fetchone()[0]}")  # noqa: S608 - the catalogue's own name
        return rows, longest, compressed, cursor.fetchone()[0]


def test_a_kept_row_of_a_few_kilobytes_stays_in_its_page_compressed_not_in_the_toast_table(corpus, media):
    # A line of 2 KB and its CSV row as long: under the default target (2032 bytes) the two
    # compressed values did not fit, and one went out to the TOAST table, read through a second
    # index on every export. Migration 0021 keeps such a row whole, both values compressed.
    awkward(corpus)
    turns = Turn.objects.filter(conversation__dataset=corpus.dataset)
    turns.update(text="D'accord.")
    turns.filter(pk=turns.filter(gold_labels__judge=corpus.judge).order_by("pk")[0].pk).update(text=_prose(0, 68))
    export_lines.refresh(corpus.judge)
    rows, longest, compressed, toasted = _kept_layout()
    assert rows == ExportLine.objects.count() == 3 and longest > 2000
    assert compressed and toasted == 0
    assert exported(corpus.judge) == row_path_lines(corpus.judge)

    with connection.cursor() as cursor:  # the same rows under the default target
        cursor.execute("ALTER TABLE reviewapp_exportline RESET (toast_tuple_target)")
        try:
            cursor.execute("TRUNCATE reviewapp_exportline, reviewapp_exportlinestate")
            export_lines.refresh(corpus.judge)
            rows, longest, _, toasted = _kept_layout()
            assert rows == 3 and longest > 2000 and toasted > 0
        finally:
            cursor.execute("ALTER TABLE reviewapp_exportline SET (toast_tuple_target = 2712)")


def test_the_kept_share_is_the_share_of_gold_labels_whose_conversation_has_current_lines(corpus, media, monkeypatch):
    from tests.scenarios import add_labelled

    add_labelled(corpus, 9)
    labels = GoldLabel.objects.filter(judge=corpus.judge, excluded=False)
    total = export_target_count(judge=corpus.judge, filters=ExportFilters())

    def share() -> float:
        return postgres_kept_share(judge=corpus.judge, filters=ExportFilters(), total=total)

    assert share() == 0.0
    export_lines.refresh(corpus.judge)
    assert share() == 1.0
    _review_rating(corpus)  # the French conversation's lines go stale
    stale = labels.filter(conversation=corpus.fr).count()
    assert 0 < stale < labels.count()
    assert share() == pytest.approx((labels.count() - stale) / labels.count())
    # an export's filters choose the labels sampled: only the stale conversation's language, or none of it
    french, japanese = ExportFilters(languages=("fr",)), ExportFilters(languages=("ja",))
    assert postgres_kept_share(judge=corpus.judge, filters=french, total=total) == 0.0
    assert postgres_kept_share(judge=corpus.judge, filters=japanese, total=total) == 1.0
    # a large export samples about KEPT_SAMPLE labels: those whose id hashes (hashint8) to 0 modulo k
    monkeypatch.setattr("reviewapp.exports.selectors.export_flat.KEPT_SAMPLE", total // 2)
    step = 2
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT conversation_id FROM reviewapp_goldlabel WHERE judge_id = %s AND NOT excluded AND hashint8(id) %% %s = 0",
            [corpus.judge.pk, step],
        )
        sampled = [conversation for (conversation,) in cursor.fetchall()]
    assert len(sampled) < labels.count()  # about half (ids differ from run to run; none at all is 0.0)
    assert share() == (pytest.approx(sum(c != corpus.fr.pk for c in sampled) / len(sampled)) if sampled else 0.0)
    # only the judge's own lines count: another judge's lines of the same conversations do not
    ExportLine.objects.update(judge_id=corpus.judge.pk + 1000)
    assert share() == 0.0


def test_an_export_of_kept_rows_is_read_on_one_connection_and_of_built_rows_in_two_halves(corpus, media, monkeypatch):
    """Reading a kept row costs the database little, so one connection keeps up (Parquet's with its
    reading, parsing and compressing in three threads) and the second half's spool would only cost;
    built rows are read in two halves. The same file either way."""
    from reviewapp.exports.services import export_parallel
    from tests.scenarios import add_labelled

    add_labelled(corpus, 60)
    awkward(corpus)
    monkeypatch.setattr(export_parallel, "SPLIT_FROM_ROWS", 2)
    monkeypatch.setattr("reviewapp.exports.services.exports.PARQUET_ROW_GROUP", 2)
    halves = []
    original = export_parallel._snapshot_connection
    monkeypatch.setattr(
        export_parallel, "_snapshot_connection", lambda snapshot=None: halves.append(1) or original(snapshot)
    )

    def read_in_halves(fmt: str = "jsonl") -> tuple[bool, bytes]:
        halves.clear()
        data = exported(corpus.judge, fmt)
        assert len(halves) in (0, 2)
        return len(halves) == 2, data

    lines, parquet = row_path_lines(corpus.judge), row_path_parquet(corpus.judge)
    assert read_in_halves() == (True, lines)  # nothing kept: every row built
    in_halves, built_parquet = read_in_halves("parquet")
    assert in_halves and parquet_rows(built_parquet) == parquet
    export_lines.refresh(corpus.judge)
    assert read_in_halves() == (False, lines)  # every row kept
    assert read_in_halves("parquet") == (False, built_parquet)  # the same file, row groups and all
    _review_rating(corpus)  # one conversation of over sixty stale: still nearly all kept
    kept = postgres_kept_share(judge=corpus.judge, filters=ExportFilters(), total=GoldLabel.objects.count())
    assert ONE_READ_FROM_KEPT_SHARE["jsonl"] <= kept < 1
    lines, parquet = row_path_lines(corpus.judge), row_path_parquet(corpus.judge)
    assert read_in_halves() == (False, lines)
    in_halves, mostly_kept_parquet = read_in_halves("parquet")
    assert not in_halves and parquet_rows(mostly_kept_parquet) == parquet
    conversations = list(Conversation.objects.order_by("pk").values_list("pk", flat=True))
    ExportLine.objects.filter(conversation_id__in=conversations[: len(conversations) // 3]).delete()
    assert read_in_halves() == (True, lines)  # a third built: halves
    assert read_in_halves("parquet") == (True, mostly_kept_parquet)


def _scans(plan: dict, table: str, alias: str) -> int:
    """How many nodes of `plan` (EXPLAIN's JSON) scan `table` under `alias` or a numbered copy of it."""
    own = plan.get("Relation Name") == table and (plan.get("Alias") or "").split("_")[0] == alias
    return own + sum(_scans(child, table, alias) for child in plan.get("Plans", ()))


def test_a_keep_builds_each_rows_context_and_adjudication_once_for_its_line_and_its_csv_row(corpus, media):
    """A kept row is written twice, as its JSONL line and as its CSV row, and both hold the context and
    the adjudication: each is a subquery the plan runs once per row, not once per use (0.5 s of the
    database's 4.6 s for 100,000 rows of one connection). The bytes are those of the exports' own
    statements (`test_kept_lines_are_read_and_give_the_bytes_of_building_every_row`)."""
    from reviewapp.exports.selectors.export_flat import postgres_gold_between
    from reviewapp.exports.selectors.export_sql import postgres_lines_statement

    gold = postgres_gold_between(corpus.judge, ExportFilters(), 0, 1 << 62)
    plans = {}
    for name, options in {
        "keep": {"keep": True},
        "lines": {"kept": True},
        "columns": {"kept": True, "columns": True},
    }.items():
        statement, params = postgres_lines_statement(corpus.judge.pk, gold, corpus.judge.slug, **options)
        with connection.cursor() as cursor:
            cursor.execute("EXPLAIN (FORMAT JSON) " + statement, params)
            plans[name] = cursor.fetchone()[0][0]["Plan"]
    # the context reads the turns before the row's in one of two ways (`export_sql._context`)
    assert _scans(plans["lines"], "reviewapp_turn", "x") == _scans(plans["columns"], "reviewapp_turn", "x") == 2
    assert _scans(plans["keep"], "reviewapp_turn", "x") == 2
    assert _scans(plans["lines"], "reviewapp_adjudication", "a") == 1
    assert _scans(plans["keep"], "reviewapp_adjudication", "a") == 1


def test_the_parquet_statement_sorts_the_gold_labels_not_the_finished_rows(corpus, media):
    """Its blocks are numbered in row order, which the planner cannot tell is that order: unless the
    gold labels are sorted by block before the lookups, it sorted every finished CSV row (on disk at
    100,000 rows) before sending the first."""
    from reviewapp.exports.selectors.export_flat import _postgres_gold
    from reviewapp.exports.selectors.export_sql import postgres_lines_statement

    statement, params = postgres_lines_statement(
        corpus.judge.pk, _postgres_gold(corpus.judge, ExportFilters()), corpus.judge.slug, columns=True, kept=True
    )
    with connection.cursor() as cursor:
        cursor.execute("EXPLAIN (FORMAT JSON) " + statement, params)
        plan = cursor.fetchone()[0][0]["Plan"]
    assert plan["Node Type"] == "Aggregate" and plan["Strategy"] == "Sorted"
    assert plan["Plans"][0]["Node Type"] != "Sort"  # the rows come in block order from below


@pytest.mark.parametrize("where", ["reading", "writing"])
def test_a_parquet_export_on_one_connection_that_fails_in_a_thread_is_failed_and_leaves_nothing(
    corpus, media, monkeypatch, where
):
    import threading

    from reviewapp.exports.selectors import export_flat
    from reviewapp.exports.services.export_writers import ParquetWriter

    export_lines.refresh(corpus.judge)
    monkeypatch.setattr("reviewapp.exports.services.exports.PARQUET_ROW_GROUP", 2)
    if where == "writing":

        def fail(self, table):
            raise OSError("disk full while writing")

        monkeypatch.setattr(ParquetWriter, "write_table", fail)
    else:
        original = export_flat._copied

        def fail_after_one(*args, **kwargs):
            yield next(original(*args, **kwargs))
            raise OSError("connection lost while reading")

        monkeypatch.setattr(export_flat, "_copied", fail_after_one)
    snapshot = snapshot_create(judge=corpus.judge, fmt="parquet", build=False)
    with pytest.raises(OSError, match=f"while {where}"):
        snapshot_write(snapshot_id=snapshot.pk)
    snapshot.refresh_from_db()
    assert snapshot.status == "failed" and f"while {where}" in snapshot.error
    assert list((Path(media) / "exports").iterdir()) == []
    assert not any(thread.name.startswith("export-") for thread in threading.enumerate())
    # the connection is usable afterwards
    monkeypatch.undo()
    assert parquet_rows(exported(corpus.judge, "parquet")) == row_path_parquet(corpus.judge)


def _exported_with(judge, **filters) -> bytes:
    snapshot = snapshot_write(snapshot_id=snapshot_create(judge=judge, fmt="jsonl", build=False, **filters).pk)
    return snapshot_path(snapshot).read_bytes()


def _answer(number: int) -> bytes:
    return f'"text":"Answer {number}"'.encode()


def test_an_export_reads_the_current_kept_blocks_and_the_other_blocks_row_by_row(corpus, media):
    """Kept blocks (ExportBlock) of sixteen conversations: a current one is read as it is kept, one
    whose conversation changed after the keep is read row by row (its rows built), and the file is
    the row path's either way; the next refresh composes that one block again, and no other."""
    from tests.scenarios import add_labelled

    add_labelled(corpus, 40)
    awkward(corpus)
    done = export_lines.refresh(corpus.judge)
    blocks = list(ExportBlock.objects.filter(judge_id=corpus.judge.pk).order_by("block"))
    conversations = sorted(GoldLabel.objects.filter(judge=corpus.judge).values_list("conversation_id", flat=True))
    assert done.blocks == len(blocks) == len({pk // 16 for pk in conversations}) >= 3
    assert [block.block for block in blocks] == sorted({pk // 16 for pk in conversations})
    assert exported(corpus.judge) == row_path_lines(corpus.judge)

    # One conversation changes (its block goes stale); another block's kept lines are marked.
    changed = Conversation.objects.get(external_id="en-12")
    Turn.objects.filter(conversation=changed, position=1).update(text="Changed after the keep.")
    kept_one = Conversation.objects.get(external_id="en-35")
    assert kept_one.pk // 16 != changed.pk // 16
    marked = ExportBlock.objects.get(judge_id=corpus.judge.pk, block=kept_one.pk // 16)
    assert _answer(35).decode() in marked.lines
    ExportBlock.objects.filter(pk=marked.pk).update(lines=marked.lines.replace("Answer 35", "Kept 35"))

    after = exported(corpus.judge)
    assert b"Changed after the keep." in after  # the stale block: built
    assert after == row_path_lines(corpus.judge).replace(_answer(35), b'"text":"Kept 35"')  # the kept one: read

    ExportBlock.objects.filter(pk=marked.pk).update(lines=marked.lines)
    again = export_lines.refresh(corpus.judge)
    assert again.built == 1 and again.blocks == 1  # the changed conversation's line, and its block
    assert ExportBlock.objects.get(judge_id=corpus.judge.pk, block=changed.pk // 16).lines.count("Changed after") == 1
    assert exported(corpus.judge) == row_path_lines(corpus.judge)
    assert export_lines.refresh(corpus.judge).blocks == 0


def test_a_filter_uses_the_kept_blocks_it_takes_whole_and_reads_the_rest_row_by_row(corpus, media):
    """A block is used only when the export's gold labels in it are the ones it was kept with: a
    filter that leaves some of a block's rows out reads that block row by row."""
    from tests.scenarios import add_labelled

    add_labelled(corpus, 20, language="de")
    add_labelled(corpus, 20, language="es")
    export_lines.refresh(corpus.judge)
    assert ExportBlock.objects.count() >= 3
    for filters in ({"languages": ["de"]}, {"languages": ["es", "fr"]}, {"gold_sources": ["imported"]}):
        data = _exported_with(corpus.judge, **filters)
        assert data and data == row_path_lines(corpus.judge, ExportFilters(**{k: tuple(v) for k, v in filters.items()}))


def test_blocks_are_deleted_with_the_last_gold_label_of_their_conversations(corpus, media):
    from tests.scenarios import add_labelled

    add_labelled(corpus, 40)
    export_lines.refresh(corpus.judge)
    last = Conversation.objects.get(external_id="en-41")
    gone = [c.pk for c in Conversation.objects.all() if c.pk // 16 == last.pk // 16]
    GoldLabel.objects.filter(conversation_id__in=gone).delete()
    export_lines.refresh(corpus.judge)
    assert not ExportBlock.objects.filter(block=last.pk // 16).exists()
    assert ExportBlock.objects.exists()
    assert exported(corpus.judge) == row_path_lines(corpus.judge)
    GoldLabel.objects.filter(judge=corpus.judge).delete()  # the judge's last gold label: none of its blocks stay
    assert export_lines.refresh(corpus.judge).ran and not ExportBlock.objects.exists()


ORPHANS_DELETE = "DELETE FROM reviewapp_exportline x WHERE x.judge_id = %s AND NOT EXISTS"


def test_lines_of_gold_labels_gone_are_deleted_by_the_next_refresh_and_a_first_refresh_looks_for_none(corpus, media):
    """A refresh deletes the kept lines whose gold label is gone: a scan of the judge's lines (1-3.7 s
    at a million). A refresh that found the judge with no lines (the first after an import) built every
    line there is from the labels it read, so it skips that scan; a label deleted meanwhile changes
    what the next refresh reads, and that one deletes its line."""
    from tests.scenarios import add_labelled

    add_labelled(corpus, 20)
    statements = []

    def record(execute, sql, params, many, context):
        statements.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(record):
        first = export_lines.refresh(corpus.judge)
    rows = exported(corpus.judge).count(b"\n")
    assert first.built == ExportLine.objects.count() == rows > 2  # a line per target: its winning label's
    assert not [sql for sql in statements if sql.startswith(ORPHANS_DELETE)]

    gone_ids = list(ExportLine.objects.order_by("gold_id").values_list("gold_id", flat=True)[:2])
    GoldLabel.objects.filter(pk__in=gone_ids).delete()
    assert ExportLine.objects.filter(gold_id__in=gone_ids).count() == 2  # kept until a refresh runs
    statements.clear()
    with connection.execute_wrapper(record):
        assert export_lines.refresh(corpus.judge).ran
    assert [sql for sql in statements if sql.startswith(ORPHANS_DELETE)]
    assert not ExportLine.objects.filter(gold_id__in=gone_ids).exists()
    assert ExportLine.objects.count() == exported(corpus.judge).count(b"\n")
    assert exported(corpus.judge) == row_path_lines(corpus.judge)


def test_a_block_with_a_row_whose_line_is_not_kept_is_not_composed(corpus, media):
    from tests.scenarios import add_labelled

    add_labelled(corpus, 20)
    export_lines.refresh(corpus.judge)
    blocks = list(ExportBlock.objects.order_by("block").values_list("block", flat=True))
    assert len(blocks) >= 2
    ExportBlock.objects.all().delete()
    in_block = [c.pk for c in Conversation.objects.all() if c.pk // 16 == blocks[0]]
    ExportLine.objects.filter(conversation_id=in_block[0]).delete()
    with connection.cursor() as cursor:
        composed = export_lines._build_blocks(cursor, corpus.judge, blocks[0] * 16, max(in_block) + 16 * len(blocks))
    assert composed == len(blocks) - 1
    assert list(ExportBlock.objects.order_by("block").values_list("block", flat=True)) == blocks[1:]
    assert exported(corpus.judge) == row_path_lines(corpus.judge)


def test_the_csv_rows_of_a_block_are_split_where_a_row_ends_not_at_a_newline_in_a_quoted_value():
    from reviewapp.exports.selectors.export_flat import _csv_rows_end

    data = b'"k1","one\nline two"\n"k2","say ""hi""\n"\n"k3",,"x"\n'
    assert _csv_rows_end(data, 0) == 0
    assert data[: _csv_rows_end(data, 1)] == b'"k1","one\nline two"\n'
    assert data[: _csv_rows_end(data, 2)] == b'"k1","one\nline two"\n"k2","say ""hi""\n"\n'
    assert _csv_rows_end(data, 3) == len(data)
    with pytest.raises(ValueError):
        _csv_rows_end(data, 4)


def _row_groups(data: bytes) -> list[int]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    metadata = pq.ParquetFile(pa.BufferReader(data)).metadata
    return [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]


def test_a_parquet_export_reads_the_current_kept_blocks_csv_rows_and_the_other_blocks_row_by_row(
    corpus, media, monkeypatch
):
    """The Parquet export on one connection reads a current kept block's CSV rows as they are kept,
    a stale block's rows one by one, and the file is the row path's either way; row groups end
    inside blocks (here every 7 rows, blocks hold 16 conversations' rows), the block split where a
    row ends, a text with a newline in it included."""
    from tests.scenarios import add_labelled

    add_labelled(corpus, 40)
    awkward(corpus)  # a text with a newline, quotes and a tab, in the first block
    monkeypatch.setattr("reviewapp.exports.services.exports.PARQUET_ROW_GROUP", 7)
    built = exported(corpus.judge, "parquet")  # nothing kept: every row built (small: one connection)
    assert parquet_rows(built) == row_path_parquet(corpus.judge)
    total = len(row_path_parquet(corpus.judge))
    assert total % 7 and _row_groups(built) == [7] * (total // 7) + [total % 7]

    done = export_lines.refresh(corpus.judge)
    blocks = list(ExportBlock.objects.filter(judge_id=corpus.judge.pk).order_by("block"))
    assert done.blocks == len(blocks) >= 3
    assert [block.rows for block in blocks] == [block.lines.count("\n") + 1 for block in blocks]
    assert sum(block.rows for block in blocks) == total
    assert all(block.columns.endswith("\n") for block in blocks)
    assert exported(corpus.judge, "parquet") == built  # read from the kept blocks: the same bytes

    # One conversation changes (its block goes stale); another block's kept CSV rows are marked.
    changed = Conversation.objects.get(external_id="en-12")
    Turn.objects.filter(conversation=changed, position=1).update(text="Changed after the keep.")
    kept_one = Conversation.objects.get(external_id="en-35")
    assert kept_one.pk // 16 != changed.pk // 16
    marked = ExportBlock.objects.get(judge_id=corpus.judge.pk, block=kept_one.pk // 16)
    assert marked.columns.count('"Answer 35"') == 1
    ExportBlock.objects.filter(pk=marked.pk).update(columns=marked.columns.replace('"Answer 35"', '"Kept 35"'))

    rows = parquet_rows(exported(corpus.judge, "parquet"))
    expected = row_path_parquet(corpus.judge)
    assert "Changed after the keep." in [row["text"] for row in expected]  # the stale block: built
    for row in expected:
        if row["text"] == "Answer 35":
            row["text"] = "Kept 35"  # the kept one: read
    assert rows == expected

    ExportBlock.objects.filter(pk=marked.pk).update(columns=marked.columns)
    again = export_lines.refresh(corpus.judge)
    assert again.built == 1 and again.blocks == 1
    assert exported(corpus.judge, "parquet") == exported(corpus.judge, "parquet")
    assert parquet_rows(exported(corpus.judge, "parquet")) == row_path_parquet(corpus.judge)


def test_a_parquet_export_with_a_filter_reads_the_blocks_it_takes_whole_and_the_rest_row_by_row(corpus, media):
    from tests.scenarios import add_labelled

    add_labelled(corpus, 20, language="de")
    add_labelled(corpus, 20, language="es")
    export_lines.refresh(corpus.judge)
    assert ExportBlock.objects.count() >= 3
    for filters in ({"languages": ["de"]}, {"languages": ["es", "fr"]}):
        snapshot = snapshot_create(judge=corpus.judge, fmt="parquet", build=False, **filters)
        data = snapshot_path(snapshot_write(snapshot_id=snapshot.pk)).read_bytes()
        expected = row_path_parquet(corpus.judge, ExportFilters(languages=tuple(filters["languages"])))
        assert expected and parquet_rows(data) == expected


def test_kept_blocks_are_read_for_a_whole_export_only():
    from reviewapp.exports.selectors.export_flat import postgres_csv, postgres_lines

    part = {"judge": None, "filters": ExportFilters(), "rows": (10, None), "blocks": True}
    with pytest.raises(ValueError, match="whole export only"):
        next(postgres_lines(finite=None, **part))
    with pytest.raises(ValueError, match="whole export only"):
        next(postgres_csv(rows_per_table=10, **part))


def test_a_block_composed_by_the_code_from_before_csv_rows_were_kept_is_stored_and_never_read(corpus, media):
    """While migration 0024 is deployed, a process still running the code from before composes blocks
    without their CSV rows: the database fills the new columns in, and the block, kept under that
    code's fingerprint, is read as stale."""
    export_lines.refresh(corpus.judge)
    block = ExportBlock.objects.get()
    ExportBlock.objects.all().delete()
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO reviewapp_exportblock (judge_id, block, golds, generations, fingerprint, migration, epoch,"
            " keys, lines) VALUES (%s, %s, %s, %s, 'an-older-code', %s, %s, %s, %s)",
            [block.judge_id, block.block, block.golds, block.generations, block.migration, block.epoch,
             block.keys, block.lines.replace("Bonjour", "Old code")],
        )  # fmt: skip
    old = ExportBlock.objects.get()
    assert (old.rows, old.columns) == (0, "")
    assert exported(corpus.judge) == row_path_lines(corpus.judge)
    assert parquet_rows(exported(corpus.judge, "parquet")) == row_path_parquet(corpus.judge)
    ExportLineState.objects.all().delete()  # that process's refresh left its own state: not this code's
    assert export_lines.refresh(corpus.judge).blocks == 1
    assert ExportBlock.objects.get().rows == block.rows > 0


def test_the_admin_shows_a_kept_block_with_its_csv_rows_and_a_kept_line_with_its_columns(corpus, media, client):
    from django.contrib.auth import get_user_model
    from django.urls import reverse

    export_lines.refresh(corpus.judge)
    block, line = ExportBlock.objects.get(), ExportLine.objects.order_by("gold_id").first()
    admin = get_user_model().objects.create_superuser("block-admin", "block-admin@example.com", "pw-block-admin-1")
    client.force_login(admin)
    page = client.get(reverse("admin:reviewapp_exportblock_change", args=[block.pk])).content.decode()
    assert "Rows:" in page and f">{block.rows}<" in page and block.rows == 3
    assert "Columns:" in page and "conciseness" in block.columns and block.columns.count("\n") == 3
    page = client.get(reverse("admin:reviewapp_exportline_change", args=[line.pk])).content.decode()
    assert "Columns:" in page


@pytest.mark.parametrize("kept", [False, True])
def test_parquet_csv_pieces_end_at_their_rows_or_at_the_block_that_passes_their_bytes(corpus, media, monkeypatch, kept):
    """`postgres_csv` hands out pieces of at most `rows_per_table` rows, ended early at the end of
    the block (the rows of sixteen conversations by id, here two) that brings them to `bytes_per_table`: an
    export's memory follows that bound, not the width of its rows."""
    from reviewapp.exports.selectors.export_flat import postgres_csv
    from tests.scenarios import add_labelled

    add_labelled(corpus, 20)
    monkeypatch.setattr("reviewapp.exports.selectors.export_sql.CONVERSATIONS_PER_BLOCK", 2)
    if kept:
        export_lines.refresh(corpus.judge)
    total = len(row_path_parquet(corpus.judge))

    def pieces(**bounds) -> list[bytes]:
        read = postgres_csv(judge=corpus.judge, filters=ExportFilters(), blocks=True, **bounds)
        return [b"".join(bytes(block) for block in piece) for piece in read]

    whole = pieces(rows_per_table=10_000)
    assert len(whole) == 1 and whole[0].count(b'\n"') == total - 1  # every row, one piece
    rows = [len(piece.splitlines()) for piece in pieces(rows_per_table=7)]
    assert rows == [7] * (total // 7) + [total % 7]  # by rows: inside blocks
    # A block holds the conversations with one id // 2; a piece ends once it holds 1 byte: at each block's end.
    by_block = pieces(rows_per_table=10_000, bytes_per_table=1)
    ids = dict(Conversation.objects.values_list("external_id", "pk"))
    assert len(ids) == Conversation.objects.count()
    blocks = [ids[row["conversation_id"]] // 2 for row in row_path_parquet(corpus.judge)]
    per_block = [len(list(rows)) for _, rows in groupby(blocks)]
    assert len(per_block) > 5 and sum(per_block) == total
    assert [piece.count(b'\n"') + 1 for piece in by_block] == per_block
    assert b"".join(by_block) == whole[0]
    # A bound between: pieces of whole blocks, each the first to reach 3 KB.
    sized = pieces(rows_per_table=10_000, bytes_per_table=3000)
    assert b"".join(sized) == whole[0] and 1 < len(sized) < len(by_block)
    assert all(len(piece) >= 3000 for piece in sized[:-1])
