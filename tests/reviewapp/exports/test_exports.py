"""Export snapshots: the EVA round trip on the real conciseness set, every format, gold priority, provenance."""

import hashlib
import hmac
import json
import re
import shutil
from datetime import date
from pathlib import Path

import pandas as pd
import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from reviewapp.corpus.services.imports import dataset_import
from reviewapp.exports.selectors.export_filters import pseudonym
from reviewapp.exports.services.export_writers import COLUMN_NAMES
from reviewapp.exports.services.exports import ExportError, snapshot_create, snapshot_path, snapshot_write
from reviewapp.exports.tasks.exports import snapshot_build
from reviewapp.models import Conversation, ExportSnapshot, GoldLabel, Judge
from tests.reviewapp.corpus.test_import_eva_validation import CONCISENESS, FIXTURES, REPO
from tests.scenarios import add_labelled

pytestmark = pytest.mark.django_db


def export(judge, fmt, **kwargs) -> ExportSnapshot:
    snapshot = snapshot_create(judge=judge, fmt=fmt, build=False, **kwargs)
    return snapshot_write(snapshot_id=snapshot.pk)


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def documented_columns() -> list[str]:
    text = (REPO / "docs" / "exports.md").read_text(encoding="utf-8")
    section = text.split("## Columns", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\| `(\w+)` \|", section, flags=re.MULTILINE)


def test_eva_round_trip_on_the_real_conciseness_set(media, tmp_path):
    dataset_import(path=CONCISENESS, fmt="eva-validation", dataset_name="eva-conciseness")
    judge = Judge.objects.get(slug="conciseness")

    snapshot = export(judge, "eva")

    path = snapshot_path(snapshot)
    assert path.name == "conciseness-v1.eva.jsonl"
    # The same records, field for field, in the same order.
    assert jsonl(path) == jsonl(CONCISENESS)
    assert snapshot.row_count == 479

    # Importing the export gives back the same conversations, turns and labels.
    again = tmp_path / "conciseness.jsonl"
    shutil.copyfile(path, again)
    summary = dataset_import(path=again, fmt="auto", dataset_name="round-trip")
    assert (summary.conversations, summary.turns, summary.labels) == (100, 958, 479)

    def labels(dataset: str):
        return sorted(
            GoldLabel.objects.filter(conversation__dataset__name=dataset).values_list(
                "conversation__external_id", "turn__position", "rating", "failure_modes", "excluded"
            )
        )

    def turns(dataset: str):
        return sorted(
            Conversation.objects.filter(dataset__name=dataset).values_list(
                "external_id", "metadata", "turns__position", "turns__role", "turns__text"
            )
        )

    assert labels("round-trip") == labels("eva-conciseness")
    assert turns("round-trip") == turns("eva-conciseness")


def test_conversation_level_judge_exports_the_trace_shape_and_round_trips(media, tmp_path):
    dataset_import(path=FIXTURES / "faithfulness.jsonl", fmt="auto")
    snapshot = export(Judge.objects.get(slug="faithfulness"), "eva")

    records = jsonl(snapshot_path(snapshot))
    originals = {r["id"]: r for r in jsonl(FIXTURES / "faithfulness.jsonl")}
    # faith-004 is marked invalid: its label is excluded, so it is not gold and not exported.
    assert [r["id"] for r in records] == ["faith-001", "faith-002", "faith-003"]
    first = records[0]
    assert first["trace"] == originals["faith-001"]["trace"]
    assert first["expected_rating"] == 3 and first["failure_mode"] == []
    assert first["agent_instructions_version"] == "v4" and first["validated"] is True
    # Every field as it came in, the comma-separated failure_mode string included.
    assert records[1]["failure_mode"] == "hallucinated_policy, unsupported_claim"
    assert records[2]["language"] == "en-GB"
    assert records == [originals[r["id"]] for r in records]

    copy = tmp_path / "faithfulness.jsonl"
    shutil.copyfile(snapshot_path(snapshot), copy)
    summary = dataset_import(path=copy, fmt="auto", dataset_name="again")
    assert (summary.conversations, summary.labels) == (3, 3)


def test_csv_and_parquet_open_in_pandas_with_the_documented_columns(corpus, media):
    assert documented_columns() == list(COLUMN_NAMES)
    csv_snapshot = export(corpus.judge, "csv")
    parquet_snapshot = export(corpus.judge, "parquet")

    for frame in (pd.read_csv(snapshot_path(csv_snapshot)), pd.read_parquet(snapshot_path(parquet_snapshot))):
        assert list(frame.columns) == documented_columns()
        assert len(frame) == 3
        rows = {(r.conversation_id, int(r.turn_position)): r for r in frame.itertuples()}
        adjudicated = rows[("fr-1", 1)]
        assert adjudicated.gold_rating == 1.0 and adjudicated.gold_source == "adjudicated"
        assert json.loads(adjudicated.gold_failure_modes) == ["gloss"]
        assert json.loads(adjudicated.verdicts) == {
            "1.0": [json.loads(adjudicated.verdicts)["1.0"][0]],
            "2.0": [json.loads(adjudicated.verdicts)["2.0"][0]],
        }
        assert json.loads(adjudicated.verdicts)["2.0"][0]["rating"] == 1.0
        assert [c["text"] for c in json.loads(adjudicated.context)] == ["Question 0"]
        assert rows[("fr-1", 3)].gold_source == "unanimous"
        assert rows[("ja-1", 1)].language == "ja"
    assert pd.read_parquet(snapshot_path(parquet_snapshot))["turn_position"].dtype == "int64"


def test_rows_carry_reviews_and_comments_with_pseudonymous_ids(corpus, media):
    snapshot = export(corpus.judge, "jsonl")
    rows = jsonl(snapshot_path(snapshot))
    text = snapshot_path(snapshot).read_text(encoding="utf-8")
    row = next(r for r in rows if r["gold_source"] == "adjudicated")
    ana, bea, lea = corpus.reviewers

    assert [(r["reviewer"], r["rating"], r["categories"]) for r in row["reviews"]] == [
        (pseudonym(ana.pk), 1.0, ["gloss"]),
        (pseudonym(bea.pk), 2.0, ["gloss"]),
    ]
    assert row["adjudication"]["lead"] == pseudonym(lea.pk)
    assert row["adjudication"]["rationale"] == "The gloss is a failure."
    assert row["comments"][0]["author"] == pseudonym(ana.pk)
    assert row["comments"][0]["categories"] == ["gloss", "politeness-formula"]
    # Stable, keyed by SECRET_KEY, and no user name in the file.
    from django.conf import settings

    expected = hmac.new(settings.SECRET_KEY.encode(), f"reviewer:{ana.pk}".encode(), hashlib.sha256).hexdigest()
    assert pseudonym(ana.pk) == "r-" + expected[:16]
    assert pseudonym(ana.pk) != pseudonym(bea.pk)
    for user in corpus.reviewers:
        assert user.username not in text


def test_filters_by_language_dataset_source_and_dates(corpus, media):
    fr = export(corpus.judge, "jsonl", languages=["fr"])
    assert {r["conversation_id"] for r in jsonl(snapshot_path(fr))} == {"fr-1"}  # fr covers fr-CA

    imported = export(corpus.judge, "jsonl", gold_sources=["imported"])
    rows = jsonl(snapshot_path(imported))
    assert sorted((r["conversation_id"], r["gold_rating"], r["gold_source"]) for r in rows) == [
        ("fr-1", 3.0, "imported"),
        ("ja-1", 3.0, "imported"),
    ]

    other = export(corpus.judge, "jsonl", dataset_ids=[corpus.dataset.pk + 1])
    assert other.row_count == 0 and snapshot_path(other).read_text() == ""

    GoldLabel.objects.filter(conversation=corpus.ja).update(created_at="2025-01-10T12:00:00Z")
    dated = export(corpus.judge, "jsonl", date_from=date(2025, 1, 1), date_to=date(2025, 1, 10))
    assert [r["conversation_id"] for r in jsonl(snapshot_path(dated))] == ["ja-1"]


def test_versions_datasheet_checksum_and_code_version(corpus, media, settings):
    settings.TRIBUNAL_CODE_VERSION = "feedc0de"
    first = export(corpus.judge, "jsonl", name="fr ja set")
    second = export(corpus.judge, "csv", name="fr ja set")

    assert (first.name, first.version, second.version) == ("fr-ja-set", 1, 2)
    path = snapshot_path(first)
    assert path.name == "fr-ja-set-v1.jsonl" and path.parent == Path(settings.MEDIA_ROOT) / "exports"
    assert first.sha256 == hashlib.sha256(path.read_bytes()).hexdigest()
    assert first.code_version == "feedc0de" and first.status == "done" and first.progress == 100

    sheet = json.loads((path.parent / "fr-ja-set-v1.datasheet.json").read_text())
    assert sheet == first.datasheet
    assert sheet["sha256"] == first.sha256 and sheet["code_version"] == "feedc0de"
    assert sheet["rows"] == 3
    assert sheet["counts"]["by_class"] == {"1": 1, "2": 1, "3": 1}
    assert sheet["counts"]["by_language"] == {"fr-CA": 2, "ja": 1}
    assert sheet["counts"]["by_language_class"] == {"fr-CA": {"1": 1, "2": 1}, "ja": {"3": 1}}
    assert sheet["counts"]["by_gold_source"] == {"adjudicated": 1, "imported": 1, "unanimous": 1}
    assert [(v["version"], v["rows_with_verdicts"]) for v in sheet["judge_versions"]] == [("1.0", 1), ("2.0", 1)]
    assert sheet["filters"]["gold_sources"] == ["adjudicated", "unanimous", "imported"]


def test_a_done_snapshot_is_never_rewritten(corpus, media):
    snapshot = export(corpus.judge, "jsonl")
    path = snapshot_path(snapshot)
    written = path.stat().st_mtime_ns
    GoldLabel.objects.filter(conversation=corpus.ja).delete()

    again = snapshot_build(snapshot.pk)  # a redelivered task

    assert again == {"snapshot": snapshot.pk, "status": "done", "rows": 3, "sha256": snapshot.sha256}
    assert path.stat().st_mtime_ns == written


def test_invalid_requests_are_refused(corpus, media):
    with pytest.raises(ExportError, match="Unknown format"):
        snapshot_create(judge=corpus.judge, fmt="xlsx", build=False)
    with pytest.raises(ExportError, match="gold source"):
        snapshot_create(judge=corpus.judge, fmt="csv", gold_sources=["guessed"], build=False)
    with pytest.raises(ExportError, match="ends before"):
        snapshot_create(
            judge=corpus.judge,
            fmt="csv",
            date_from=date(2026, 2, 1),
            date_to=date(2026, 1, 1),
            build=False,
        )
    assert not ExportSnapshot.objects.exists()


def test_a_failed_write_marks_the_snapshot_and_leaves_no_file(corpus, media, monkeypatch):
    snapshot = snapshot_create(judge=corpus.judge, fmt="jsonl", build=False)

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr("reviewapp.exports.services.export_writers.JsonlWriter.write", broken)
    monkeypatch.setattr("reviewapp.exports.services.export_writers.JsonlWriter.write_lines", broken)  # PostgreSQL
    with pytest.raises(RuntimeError):
        snapshot_write(snapshot_id=snapshot.pk)
    snapshot.refresh_from_db()
    assert snapshot.status == "failed" and "disk full" in snapshot.error
    assert list((Path(media) / "exports").iterdir()) == []


def test_the_queued_build_runs_on_commit(corpus, media, django_capture_on_commit_callbacks, settings):
    from reviewapp.celery import app
    from reviewapp.exports.tasks.exports import snapshot_build_queue

    previous = app.conf.task_always_eager
    app.conf.task_always_eager = True
    try:
        with django_capture_on_commit_callbacks(execute=True) as callbacks:
            snapshot = snapshot_create(judge=corpus.judge, fmt="parquet", build=snapshot_build_queue)
    finally:
        app.conf.task_always_eager = previous
    assert len(callbacks) == 1
    snapshot.refresh_from_db()
    assert snapshot.status == "done" and snapshot.row_count == 3


def test_export_dataset_command_writes_the_file_and_datasheet(corpus, media, tmp_path, capsys):
    out = tmp_path / "out" / "fr.csv"
    call_command(
        "export_dataset", "--judge", "conciseness", "--format", "csv", "--out", str(out), "--language", "fr-CA"
    )
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    snapshot = ExportSnapshot.objects.get(pk=result["snapshot"])
    assert result["rows"] == 2 == snapshot.row_count
    assert hashlib.sha256(out.read_bytes()).hexdigest() == snapshot.sha256 == result["sha256"]
    assert json.loads(Path(f"{out}.datasheet.json").read_text())["filters"]["languages"] == ["fr-CA"]
    assert list(pd.read_csv(out)["conversation_id"]) == ["fr-1", "fr-1"]


def test_an_export_runs_a_fixed_number_of_queries_per_chunk(corpus, media, django_assert_max_num_queries):
    with CaptureQueriesContext(connection) as small:
        export(corpus.judge, "jsonl", name="small")
    add_labelled(corpus, 60)
    with django_assert_max_num_queries(len(small)):
        snapshot = export(corpus.judge, "jsonl", name="big")
    assert snapshot.row_count == 63
    assert len(small) <= 25


def test_parquet_exports_allocate_from_jemalloc_where_pyarrow_has_it(tmp_path, monkeypatch):
    """The default pool (mimalloc) keeps what a row group freed; with two threads parsing row groups
    a million-row export peaked at 290 MiB against 243 with jemalloc. A pool named in
    ARROW_DEFAULT_MEMORY_POOL is left as it is."""
    import pyarrow as pa

    from reviewapp.exports.services.export_writers import ParquetWriter, arrow_memory_pool

    try:
        pa.jemalloc_memory_pool()
    except NotImplementedError:
        pytest.skip("this pyarrow is built without jemalloc")
    monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
    arrow_memory_pool.cache_clear()
    previous = pa.default_memory_pool()
    try:
        pa.set_memory_pool(pa.system_memory_pool())
        ParquetWriter(tmp_path / "rows.parquet").close()
        assert pa.default_memory_pool().backend_name == "jemalloc"

        arrow_memory_pool.cache_clear()
        pa.set_memory_pool(pa.system_memory_pool())
        monkeypatch.setenv("ARROW_DEFAULT_MEMORY_POOL", "system")
        assert arrow_memory_pool() == "system"
    finally:
        pa.set_memory_pool(previous)
        arrow_memory_pool.cache_clear()


def test_the_eva_datasheet_counts_what_the_flat_rows_hold(corpus, media):
    """The EVA shapes write no reviews, comments or verdicts, yet their datasheet counts them as the
    flat formats do: per target, a conversation-level row with every comment of its conversation, a
    comment about no judge counted and one about another judge not."""
    from tests.factories import (
        CommentFactory,
        GoldLabelFactory,
        JudgeFactory,
        ReviewFactory,
        ReviewItemFactory,
        VerdictFactory,
    )

    fr, (ana, bea, _) = corpus.fr, corpus.reviewers
    GoldLabelFactory(judge=corpus.judge, conversation=fr, turn=None, source="imported", rating=2)
    item = ReviewItemFactory(judge=corpus.judge, conversation=fr, turn=None)
    ReviewFactory(item=item, reviewer=bea, rating=2, label="")
    VerdictFactory(judge_version=corpus.v2, conversation=fr, turn=None, rating=2)
    turn = fr.turns.order_by("position").last()
    CommentFactory(turn=turn, author=bea, judge=None, body="About no judge.")
    CommentFactory(turn=turn, author=ana, judge=JudgeFactory(slug="another"), body="About another judge.")

    flat, eva = export(corpus.judge, "jsonl"), export(corpus.judge, "eva")
    rows = jsonl(snapshot_path(flat))
    counts = eva.datasheet["counts"]
    assert eva.datasheet["rows"] == len(rows) == 4
    assert counts["reviews"] == sum(len(row["reviews"]) for row in rows) == 3
    # One on fr's first turn; on the conversation, that one and the one about no judge (on a turn with no row).
    assert counts["comments"] == sum(len(row["comments"]) for row in rows) == 3
    versions = {v["version"]: v["rows_with_verdicts"] for v in eva.datasheet["judge_versions"]}
    assert versions == {"1.0": 1, "2.0": 2}
    assert versions == {v: sum(1 for row in rows if v in row["verdicts"]) for v in versions}
    for key in ("rows", "counts", "judge_versions"):
        assert eva.datasheet[key] == flat.datasheet[key], key


def _targets(judge) -> int:
    """The targets an export of `judge` draws on, counted here from the labels themselves."""
    labels = GoldLabel.objects.filter(judge=judge, excluded=False).values_list("conversation_id", "turn_id")
    return len(set(labels))


def test_the_target_count_of_labels_of_one_source_is_one_scan_and_of_several_is_the_targets(
    corpus, django_assert_num_queries
):
    from reviewapp.exports.selectors.export_filters import ExportFilters, export_target_count
    from tests.factories import GoldLabelFactory

    judge, everything = corpus.judge, ExportFilters()
    # The corpus mixes sources, one turn with two labels (imported and adjudicated): the targets
    # are counted, not the labels.
    labels, targets = GoldLabel.objects.filter(judge=judge, excluded=False), _targets(judge)
    assert labels.count() > targets > 0
    with django_assert_num_queries(2):
        assert export_target_count(judge=judge, filters=everything) == targets
    # Labels of one source only (the imported ones, by filter): one statement, each label a target.
    imported = ExportFilters(gold_sources=("imported",))
    expected = len(set(labels.filter(source="imported").values_list("conversation_id", "turn_id")))
    with django_assert_num_queries(1):
        assert export_target_count(judge=judge, filters=imported) == expected > 0
    # A conversation-level label beside its conversation's turn labels is a target of its own.
    conversation = corpus.ja
    GoldLabelFactory(judge=judge, conversation=conversation, turn=None, source="imported", rating=1)
    with django_assert_num_queries(1):
        assert export_target_count(judge=judge, filters=imported) == expected + 1
    assert export_target_count(judge=judge, filters=everything) == _targets(judge)
    # No label at all: 0, in one statement.
    GoldLabel.objects.filter(judge=judge).delete()
    with django_assert_num_queries(1):
        assert export_target_count(judge=judge, filters=everything) == 0


def test_the_target_count_looks_up_a_few_reviewed_labels_and_counts_targets_when_they_are_many():
    """Labels of the less common sources are looked up while they are at most 5% of all (a lookup
    each is cheaper than a DISTINCT over every target then, twice as dear from an eighth on)."""
    from reviewapp.exports.selectors.export_filters import ExportFilters, export_target_count
    from tests.factories import GoldLabelFactory, JudgeFactory, TurnFactory

    judge = JudgeFactory()
    turns = [TurnFactory() for _ in range(60)]
    for turn in turns:
        GoldLabelFactory(judge=judge, turn=turn, source="imported", rating=1)

    def counted() -> tuple[int, str]:
        with CaptureQueriesContext(connection) as queries:
            count = export_target_count(judge=judge, filters=ExportFilters())
        assert len(queries.captured_queries) == 2
        return count, queries.captured_queries[1]["sql"]

    GoldLabelFactory(judge=judge, turn=turns[0], source="unanimous", rating=2)  # 1 of 61: looked up
    GoldLabelFactory(judge=judge, turn=turns[1], source="adjudicated", rating=2)  # 2 of 62
    GoldLabelFactory(judge=judge, turn=turns[2], source="unanimous", rating=2)  # 3 of 63: 4.8%
    count, sql = counted()
    assert count == 60 and "EXISTS" in sql and "DISTINCT" not in sql
    GoldLabelFactory(judge=judge, turn=turns[3], source="unanimous", rating=2)  # 4 of 64: 6.3%
    count, sql = counted()
    assert count == 60 and "DISTINCT" in sql and "EXISTS" not in sql


@pytest.mark.parametrize("share", [1.0, 0.0], ids=["looked-up", "distinct"])
def test_the_target_count_of_a_mixture_of_sources_is_its_targets_whichever_source_is_most_common(
    django_assert_num_queries, monkeypatch, share
):
    """Targets with labels from one, two and three sources, on turns and on whole conversations, in
    two languages, some labels excluded; the most common source is `unanimous`, not the first nor
    the last by priority. Every filter's count is the targets' counted here from the labels, both
    ways the count can go (the other sources' labels looked up, or every target counted)."""
    from itertools import combinations

    from reviewapp.exports.selectors.export_filters import ExportFilters, export_target_count
    from tests.factories import ConversationFactory, DatasetFactory, GoldLabelFactory, JudgeFactory, TurnFactory

    monkeypatch.setattr("reviewapp.exports.selectors.export_filters.LOOKUP_SHARE", share)
    judge, other = JudgeFactory(), JudgeFactory()
    dataset = DatasetFactory()
    sources = ("adjudicated", "unanimous", "imported")
    # every non-empty set of sources, on a turn and on a conversation, and unanimous alone many times
    kinds = [set(c) for n in (1, 2, 3) for c in combinations(sources, n)] + [{"unanimous"}] * 6
    for n, kind in enumerate(kinds):
        conversation = ConversationFactory(dataset=dataset, language="fr" if n % 2 else "ja")
        turn = TurnFactory(conversation=conversation)
        for source in kind:
            GoldLabelFactory(judge=judge, conversation=conversation, turn=turn, source=source, rating=1)
            GoldLabelFactory(judge=judge, conversation=conversation, turn=None, source=source, rating=2)
            GoldLabelFactory(judge=other, conversation=conversation, turn=turn, source=source, rating=3)
        if n % 3 == 0:  # an excluded label: not drawn on, its target only if another label has it
            label = GoldLabel.objects.filter(judge=judge, turn=turn).order_by("source").first()
            GoldLabel.objects.filter(pk=label.pk).update(excluded=True)

    def targets(**where) -> int:
        labels = GoldLabel.objects.filter(judge=judge, excluded=False, **where)
        return len(set(labels.values_list("conversation_id", "turn_id")))

    expected = targets()
    assert GoldLabel.objects.filter(judge=judge, excluded=False).count() > expected > len(kinds)
    with django_assert_num_queries(2):
        assert export_target_count(judge=judge, filters=ExportFilters()) == expected
    for pair in combinations(sources, 2):
        assert export_target_count(judge=judge, filters=ExportFilters(gold_sources=pair)) == targets(source__in=pair)
    assert export_target_count(judge=judge, filters=ExportFilters(languages=("fr",))) == targets(
        conversation__language="fr"
    )
    assert export_target_count(judge=other, filters=ExportFilters()) == len(kinds)
