"""Export snapshots: versioned, immutable validation datasets with a datasheet of their provenance.

`snapshot_create` records what to export (judge, filters, format) as the next version of a name and
queues `tasks.exports.snapshot_build` when the transaction commits. `snapshot_write` streams the rows
from `selectors.exports.export_rows` into the file - JSONL and CSV a line at a time, Parquet a row
group at a time, the EVA shapes a conversation at a time - so memory does not grow with the row
count. The file is written beside its final name and renamed when complete, then its sha256 and the
datasheet (filters, counts per class and language, judge versions, code version) are stored on the
snapshot and written next to the file as `<name>-v<version>.datasheet.json`.

A snapshot never changes once done: exporting the same name again makes version + 1.
"""

from __future__ import annotations

import csv
import hashlib
import json
import logging
import math
import os
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import IO, Any

import orjson
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.text import slugify

from reviewapp.importers.eva_validation import ORDER_KEY, RAW_KEY, SHAPE_KEY, reorder
from reviewapp.models import ExportSnapshot, GoldLabel, Judge, JudgeVersion
from reviewapp.selectors import exports as export_selectors
from reviewapp.selectors.exports import ExportFilters, ExportRow
from reviewapp.services.audit import audit_record
from reviewapp.versioning import code_version

log = logging.getLogger(__name__)

# format -> file extension
FORMATS = {"jsonl": "jsonl", "csv": "csv", "parquet": "parquet", "eva": "eva.jsonl"}
PARQUET_ROW_GROUP = 10_000
PROGRESS_EVERY_ROWS = 2_000
HASH_BLOCK = 1 << 20

# The flat formats' columns, in order, with their Parquet types (docs/exports.md documents each one).
# Nested values (context, reviews, comments, verdicts, failure modes) are JSON text in CSV and Parquet;
# a missing value is empty (CSV) or null (Parquet), never the text "null".
COLUMNS: tuple[tuple[str, str], ...] = (
    ("dataset", "string"),
    ("conversation_id", "string"),
    ("language", "string"),
    ("judge", "string"),
    ("level", "string"),
    ("turn_position", "int64"),
    ("turn_role", "string"),
    ("text", "string"),
    ("intended_text", "string"),
    ("context", "json"),
    ("gold_rating", "float64"),
    ("gold_label", "string"),
    ("gold_passed", "bool"),
    ("gold_failure_modes", "json"),
    ("gold_source", "string"),
    ("gold_labelled_at", "string"),
    ("adjudication", "json"),
    ("reviews", "json"),
    ("comments", "json"),
    ("verdicts", "json"),
)
COLUMN_NAMES = tuple(name for name, _ in COLUMNS)


class ExportError(ValueError):
    """An export that cannot be created or written as asked."""


def exports_dir() -> Path:
    return Path(settings.MEDIA_ROOT) / "exports"


def file_name(snapshot: ExportSnapshot) -> str:
    return f"{snapshot.name}-v{snapshot.version}.{FORMATS[snapshot.format]}"


def datasheet_name(snapshot: ExportSnapshot) -> str:
    return f"{snapshot.name}-v{snapshot.version}.datasheet.json"


def snapshot_path(snapshot: ExportSnapshot) -> Path:
    """The snapshot's file on disk (file_path is relative to MEDIA_ROOT)."""
    return Path(settings.MEDIA_ROOT) / (snapshot.file_path or f"exports/{file_name(snapshot)}")


# --- creating -----------------------------------------------------------------------------------------


def _clean_name(name: str, judge: Judge) -> str:
    cleaned = slugify(name or judge.slug)
    if not cleaned:
        raise ExportError(f"{name!r} cannot name a file: use letters, digits, - or _.")
    return cleaned[:150]


def snapshot_create(
    *,
    judge: Judge,
    fmt: str,
    name: str = "",
    languages: Sequence[str] = (),
    dataset_ids: Sequence[int] = (),
    gold_sources: Sequence[str] = (),
    date_from: date | None = None,
    date_to: date | None = None,
    user=None,
    build: Callable[[int], None] | None = None,
) -> ExportSnapshot:
    """Record the next version of an export and queue its build once the transaction commits.

    `build(snapshot_id)` queues the build, handed in by the caller (tasks.exports.snapshot_build_queue);
    without it the snapshot is only recorded (the caller writes it with `snapshot_write`, as the command does).
    """
    if fmt not in FORMATS:
        raise ExportError(f"Unknown format {fmt!r}: expected one of {', '.join(FORMATS)}.")
    unknown = set(gold_sources) - set(export_selectors.SOURCE_PRIORITY)
    if unknown:
        raise ExportError(f"Unknown gold source(s): {', '.join(sorted(unknown))}.")
    if date_from and date_to and date_from > date_to:
        raise ExportError("The date range ends before it starts.")
    name = _clean_name(name, judge)
    filters = ExportFilters(
        languages=tuple(dict.fromkeys(code.strip() for code in languages if code.strip())),
        dataset_ids=tuple(sorted({int(pk) for pk in dataset_ids})),
        gold_sources=tuple(s for s in export_selectors.SOURCE_PRIORITY if s in set(gold_sources)),
        date_from=date_from,
        date_to=date_to,
    )
    creator = user if user is not None and user.is_authenticated else None
    with transaction.atomic():
        for _attempt in range(5):
            last = ExportSnapshot.objects.filter(name=name).order_by("-version").values_list("version", flat=True)
            version = (last.first() or 0) + 1
            try:
                with transaction.atomic():
                    snapshot = ExportSnapshot.objects.create(
                        name=name,
                        version=version,
                        judge=judge,
                        format=fmt,
                        filters=filters.as_dict(),
                        status=ExportSnapshot.Status.PENDING,
                        code_version=code_version(),
                        created_by=creator,
                    )
            except IntegrityError:
                continue  # another export took this version a moment ago: take the next one
            break
        else:
            raise ExportError(f"Could not reserve a version of {name!r}; try again.")
        snapshot.file_path = f"exports/{file_name(snapshot)}"
        snapshot.save(update_fields=["file_path"])
        audit_record(
            actor=creator,
            action="export.create",
            obj=snapshot,
            before=None,
            after={"name": name, "version": version, "format": fmt, "judge": judge.slug, "filters": snapshot.filters},
        )
        if build:
            snapshot_id = snapshot.pk
            transaction.on_commit(lambda: build(snapshot_id))
    return snapshot


# --- rows in each format ------------------------------------------------------------------------------


def _number(value: float | None) -> int | float | None:
    if value is None:
        return None
    return int(value) if float(value).is_integer() else value


def flat_row(row: ExportRow, judge: Judge) -> dict[str, Any]:
    gold = row.gold
    return {
        "dataset": row.conversation.dataset.name,
        "conversation_id": row.conversation.external_id,
        "language": row.language,
        "judge": judge.slug,
        "level": "turn" if row.turn is not None else "conversation",
        "turn_position": row.turn.position if row.turn is not None else None,
        "turn_role": row.turn.role if row.turn is not None else None,
        "text": row.turn.text if row.turn is not None else None,
        "intended_text": (row.turn.intended_text or None) if row.turn is not None else None,
        "context": row.context(),
        "gold_rating": gold.rating,
        "gold_label": gold.label or None,
        "gold_passed": gold.passed,
        "gold_failure_modes": list(gold.failure_modes or []),
        "gold_source": gold.source,
        "gold_labelled_at": gold.created_at.isoformat(),
        "adjudication": row.adjudication,
        "reviews": row.reviews,
        "comments": row.comments,
        "verdicts": row.verdicts,
    }


def _json_bytes(value: Any) -> bytes:
    """Compact UTF-8 JSON by orjson. orjson would write NaN and Infinity as null without a word, so
    every value is passed through `NonFinite.clean` first, which counts them for the datasheet."""
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS)


def _json(value: Any) -> str:
    return _json_bytes(value).decode()


class NonFinite:
    """Writes NaN and ±Infinity (from rows stored before imports refused them) as null, and counts
    them for the datasheet: every export format says "no value" the same way."""

    def __init__(self) -> None:
        self.count = 0

    def flat(self, row: dict[str, Any]) -> dict[str, Any]:
        """A flat row: numbers can only be non-finite in the rating fields and the JSON columns that
        come from stored JSON (failure modes, verdict flags), so only those are walked."""
        rating = row["gold_rating"]
        if rating is not None and not math.isfinite(rating):
            self.count += 1
            row["gold_rating"] = None
        if row["gold_failure_modes"]:
            row["gold_failure_modes"] = self.clean(row["gold_failure_modes"])
        for review in row["reviews"]:
            review["rating"] = self.clean(review["rating"])
        if row["adjudication"] is not None:
            row["adjudication"]["rating"] = self.clean(row["adjudication"]["rating"])
        for verdicts in row["verdicts"].values():
            for verdict in verdicts:
                verdict["rating"] = self.clean(verdict["rating"])
                if verdict["flags"]:
                    verdict["flags"] = self.clean(verdict["flags"])
        return row

    def clean(self, value: Any) -> Any:
        if isinstance(value, float):
            if math.isfinite(value):
                return value
            self.count += 1
            return None
        if isinstance(value, dict):
            return {key: self.clean(item) for key, item in value.items()}
        if isinstance(value, list | tuple):
            return [self.clean(item) for item in value]
        return value


class _JsonlWriter:
    binary = True

    def __init__(self, handle: IO[bytes], judge: Judge):
        self.handle, self.judge = handle, judge
        self.finite = NonFinite()

    def write(self, row: ExportRow) -> None:
        self.handle.write(_json_bytes(self.finite.flat(flat_row(row, self.judge))) + b"\n")

    def close(self) -> None:
        pass


class _CsvWriter:
    binary = False

    def __init__(self, handle: IO[str], judge: Judge):
        self.judge = judge
        self.finite = NonFinite()
        self.writer = csv.writer(handle, lineterminator="\n")
        self.writer.writerow(COLUMN_NAMES)

    def write(self, row: ExportRow) -> None:
        values = self.finite.flat(flat_row(row, self.judge))
        cells = []
        for name, kind in COLUMNS:
            value = values[name]
            if value is None:
                cells.append("")
            elif kind == "json":
                cells.append(_json(value))
            elif kind == "bool":
                cells.append("true" if value else "false")
            else:
                cells.append(value)
        self.writer.writerow(cells)

    def close(self) -> None:
        pass


class _ParquetWriter:
    """Record batches of PARQUET_ROW_GROUP rows through pyarrow's ParquetWriter, one row group each:
    only one batch is ever in memory."""

    def __init__(self, path: Path, judge: Judge):
        import pyarrow as pa
        import pyarrow.parquet as pq

        self.pa, self.judge = pa, judge
        types = {"string": pa.string(), "json": pa.string(), "int64": pa.int64(), "float64": pa.float64()}
        types["bool"] = pa.bool_()
        self.schema = pa.schema([(name, types[kind]) for name, kind in COLUMNS])
        self.writer = pq.ParquetWriter(str(path), self.schema, compression="zstd")
        self.buffer: dict[str, list] = {name: [] for name in COLUMN_NAMES}
        self.buffered = 0
        self.finite = NonFinite()

    def write(self, row: ExportRow) -> None:
        values = self.finite.flat(flat_row(row, self.judge))
        for name, kind in COLUMNS:
            value = values[name]
            self.buffer[name].append(_json(value) if kind == "json" and value is not None else value)
        self.buffered += 1
        if self.buffered >= PARQUET_ROW_GROUP:
            self._flush()

    def _flush(self) -> None:
        if not self.buffered:
            return
        self.writer.write_batch(
            self.pa.RecordBatch.from_pydict(self.buffer, schema=self.schema), row_group_size=self.buffered
        )
        self.buffer = {name: [] for name in COLUMN_NAMES}
        self.buffered = 0

    def close(self) -> None:
        self._flush()
        self.writer.close()


class _EvaWriter:
    """EVA validation-set records, the shapes the importer reads: one record per conversation.

    Turn-level judges get the `conv_turns` shape (like EVA's conciseness.jsonl), conversation-level
    judges the `trace` shape. Rows of one conversation are consecutive, so one record is buffered.
    """

    binary = True

    def __init__(self, handle: IO[bytes], judge: Judge):
        self.handle, self.judge = handle, judge
        self.rows: list[ExportRow] = []
        self.finite = NonFinite()

    def write(self, row: ExportRow) -> None:
        if self.rows and self.rows[0].conversation.pk != row.conversation.pk:
            self._flush()
        self.rows.append(row)

    def _flush(self) -> None:
        if not self.rows:
            return
        first = self.rows[0]
        shape = (first.conversation.metadata or {}).get("eva_shape")
        if shape == "intended_turns" and first.turn is None:
            record = eva_intended_turns_record(first)
        elif shape == "entity_transcription" and first.turn is not None:
            record = eva_entity_record(first.conversation, first.turns, self.rows)
        elif self.judge.level == Judge.Level.CONVERSATION or first.turn is None:
            record = eva_trace_record(first)
        else:
            record = eva_conv_turns_record(first.conversation, first.turns, self.rows)
        self.handle.write(_json_bytes(self.finite.clean(record)) + b"\n")
        self.rows = []

    def close(self) -> None:
        self._flush()


def _without_bookkeeping(metadata: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in metadata.items() if key not in ("eva_shape", RAW_KEY, ORDER_KEY, SHAPE_KEY)}


def _as_imported(record: dict[str, Any], conversation) -> dict[str, Any]:
    """The record with its keys, and those of every object in it, in the order they came in."""
    metadata = conversation.metadata or {}
    return reorder(_in_order(record, metadata.get(ORDER_KEY)), metadata.get(SHAPE_KEY))


def _in_order(
    record: dict[str, Any], order: Sequence[str] | None, optional: Sequence[str] = ("position",)
) -> dict[str, Any]:
    """The record's keys in the order they came in (new keys after them); the `optional` keys, which
    the writer fills in by default, only if they came in."""
    if not order:
        return record
    ordered = {key: record[key] for key in order if key in record}
    ordered.update((key, value) for key, value in record.items() if key not in ordered and key not in optional)
    return ordered


def _gold_fields(gold, normalized: dict[str, Any]) -> dict[str, Any]:
    """The gold label's EVA fields: as they came in while the imported label still holds, else Tribunal's."""
    raw = (gold.metadata or {}).get(RAW_KEY)
    if gold.source == GoldLabel.Source.IMPORTED and isinstance(raw, dict):
        return dict(raw)
    return normalized


def _record_head(conversation, id_key: str) -> dict[str, Any]:
    """The conversation's own fields back at the top of the record: what came in as it came in, its id
    and (if not en) its language."""
    metadata = conversation.metadata or {}
    record = _without_bookkeeping(metadata)
    raw = metadata.get(RAW_KEY)
    if isinstance(raw, dict):
        record.update(raw)
    if not any(str(record[key]) == conversation.external_id for key in (id_key, "id") if key in record):
        record[id_key] = conversation.external_id
    if conversation.language != "en" and "language" not in record:
        record["language"] = conversation.language
    return record


def eva_conv_turns_record(conversation, turns, rows: Sequence[ExportRow]) -> dict[str, Any]:
    labels = {row.turn.position: row.gold for row in rows if row.turn is not None}
    conv_turns = []
    for turn in turns:
        metadata = turn.metadata or {}
        entry: dict[str, Any] = {
            "position": turn.position,
            "role": turn.role,
            "content": turn.text,
            **_without_bookkeeping(metadata),
        }
        if isinstance(metadata.get(RAW_KEY), dict):
            entry.update(metadata[RAW_KEY])
        gold = labels.get(turn.position)
        if gold is not None:
            normalized = {"expected_rating": _number(gold.rating), "failure_modes": list(gold.failure_modes or [])}
            entry.update(_gold_fields(gold, normalized))
        conv_turns.append(_in_order(entry, metadata.get(ORDER_KEY)))
    record = _record_head(conversation, "conversation_id")
    record["conv_turns"] = conv_turns
    return _as_imported(record, conversation)


def _trace_event(turn) -> dict[str, Any] | None:
    if turn.role in ("agent", "user"):
        return {"event_type": f"{turn.role}_utterance", "utterance": turn.text, **turn.metadata}
    if turn.role in ("tool_call", "tool_response"):
        if isinstance(turn.metadata.get("event"), dict):
            return dict(turn.metadata["event"])
        try:
            body = json.loads(turn.text)
        except ValueError:
            body = {"text": turn.text}
        return {"event_type": turn.role, **(body if isinstance(body, dict) else {"value": body})}
    return None


def eva_trace_record(row: ExportRow) -> dict[str, Any]:
    conversation = row.conversation
    record: dict[str, Any] = {"id": conversation.external_id}
    record.update(_record_head(conversation, "id"))
    record["trace"] = [event for event in map(_trace_event, row.turns) if event is not None]
    normalized = {"expected_rating": _number(row.gold.rating), "failure_mode": list(row.gold.failure_modes or [])}
    record.update(_gold_fields(row.gold, normalized))
    for key, value in (row.gold.metadata or {}).items():
        if key in ("validated", "invalid", "description"):
            record[key] = value
    return _as_imported(record, conversation)


def eva_intended_turns_record(row: ExportRow) -> dict[str, Any]:
    """EVA's TTS-fidelity shape: the intended turns and a conversation-level 0/1 rating."""
    conversation = row.conversation
    record = _record_head(conversation, "id")
    turns = []
    for turn in row.turns:
        metadata = turn.metadata or {}
        entry: dict[str, Any] = {
            "turn_index": turn.position,
            "role": "assistant" if turn.role == "agent" else turn.role,
            "text": turn.intended_text,
            "tts_critical_entities": list(turn.entities or []),
            **{key: value for key, value in _without_bookkeeping(metadata).items() if key != "perturbation"},
        }
        if isinstance(metadata.get(RAW_KEY), dict):
            entry.update(metadata[RAW_KEY])
        turns.append(_in_order(entry, metadata.get(ORDER_KEY), optional=("turn_index", "tts_critical_entities")))
    record["intended_turns"] = turns
    gold = row.gold
    rating = gold.rating if gold.rating is not None else (None if gold.passed is None else float(gold.passed))
    record.update(_gold_fields(gold, {"expected_rating": _number(rating)}))
    return _as_imported(record, conversation)


def eva_entity_record(conversation, turns, rows: Sequence[ExportRow]) -> dict[str, Any]:
    """EVA's entity-transcription shape: what TTS said and STT heard per turn, labels per entity."""
    record = _record_head(conversation, "id")
    record.setdefault("user_tts", [turn.intended_text for turn in turns])
    record.setdefault("transcription", [turn.text for turn in turns])
    labels = []
    for row in sorted((r for r in rows if r.turn is not None), key=lambda r: r.turn.position):
        gold = row.gold
        normalized = {
            "label": {
                "turn_id": row.turn.position,
                "entities": list(row.turn.entities or []),
                "passed": gold.passed,
                "failure_modes": list(gold.failure_modes or []),
            }
        }
        labels.append(_gold_fields(gold, normalized)["label"])
    record["labels"] = labels
    return _as_imported(record, conversation)


# --- the datasheet ------------------------------------------------------------------------------------


def class_of(row: ExportRow) -> str:
    gold = row.gold
    if gold.rating is not None:
        return str(_number(gold.rating))
    if gold.label:
        return gold.label
    if gold.passed is not None:
        return "pass" if gold.passed else "fail"
    return "none"


@dataclass
class _Tally:
    rows: int = 0
    by_class: Counter = field(default_factory=Counter)
    by_language: Counter = field(default_factory=Counter)
    by_language_class: dict[str, Counter] = field(default_factory=lambda: defaultdict(Counter))
    by_source: Counter = field(default_factory=Counter)
    by_dataset: Counter = field(default_factory=Counter)
    versions: Counter = field(default_factory=Counter)
    reviews: int = 0
    comments: int = 0
    non_finite: int = 0

    def add(self, row: ExportRow) -> None:
        label = class_of(row)
        self.rows += 1
        self.by_class[label] += 1
        self.by_language[row.language] += 1
        self.by_language_class[row.language][label] += 1
        self.by_source[row.gold.source] += 1
        self.by_dataset[row.conversation.dataset.name] += 1
        self.versions.update(row.verdicts.keys())
        self.reviews += len(row.reviews)
        self.comments += len(row.comments)


def _sorted(counter: Counter) -> dict[str, int]:
    return dict(sorted(counter.items()))


def _datasheet(snapshot: ExportSnapshot, judge: Judge, tally: _Tally, sha256: str, size: int) -> dict[str, Any]:
    versions = JudgeVersion.objects.filter(judge=judge).order_by("created_at", "id")
    return {
        "name": snapshot.name,
        "version": snapshot.version,
        "format": snapshot.format,
        "file": file_name(snapshot),
        "bytes": size,
        "sha256": sha256,
        "judge": {"slug": judge.slug, "level": judge.level, "scale": judge.scale},
        "filters": snapshot.filters,
        "rows": tally.rows,
        "counts": {
            "by_class": _sorted(tally.by_class),
            "by_language": _sorted(tally.by_language),
            "by_language_class": {lang: _sorted(c) for lang, c in sorted(tally.by_language_class.items())},
            "by_gold_source": _sorted(tally.by_source),
            "by_dataset": _sorted(tally.by_dataset),
            "reviews": tally.reviews,
            "comments": tally.comments,
        },
        "non_finite_values_written_as_null": tally.non_finite,
        "judge_versions": [
            {
                "version": jv.version,
                "spec_hash": jv.spec_hash,
                "source": jv.source,
                "rows_with_verdicts": tally.versions.get(jv.version, 0),
            }
            for jv in versions
        ],
        "columns": list(COLUMN_NAMES) if snapshot.format != "eva" else None,
        "gold_priority": list(export_selectors.SOURCE_PRIORITY),
        "reviewer_ids": "HMAC-SHA256 of the user id keyed by the server secret (stable, not reversible)",
        "code_version": snapshot.code_version,
        "created_at": snapshot.created_at.isoformat(),
        "created_by": snapshot.created_by.get_username() if snapshot.created_by else None,
        "written_at": timezone.now().isoformat(),
    }


# --- writing ------------------------------------------------------------------------------------------


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(HASH_BLOCK), b""):
            digest.update(block)
    return digest.hexdigest()


def _progress(snapshot_id: int, rows: int, total: int) -> None:
    percent = min(99, (100 * rows) // total) if total else 0
    ExportSnapshot.objects.filter(pk=snapshot_id).update(progress=percent, row_count=rows)


def snapshot_write(*, snapshot_id: int, chunk_size: int = export_selectors.CHUNK_SIZE) -> ExportSnapshot:
    """Write the snapshot's file and datasheet; safe to run again (a done snapshot is left as it is).

    Not one transaction: progress must be visible to the page while the rows stream. The file only
    takes its final name when complete, and the snapshot is marked done after that.
    """
    snapshot = ExportSnapshot.objects.select_related("judge", "created_by").get(pk=snapshot_id)
    if snapshot.status == ExportSnapshot.Status.DONE:
        return snapshot
    if snapshot.judge is None:
        raise ExportError(f"Snapshot {snapshot.pk} has no judge any more (it was deleted).")
    judge = snapshot.judge
    ExportSnapshot.objects.filter(pk=snapshot_id).update(
        status=ExportSnapshot.Status.RUNNING, progress=0, row_count=0, error=""
    )
    filters = ExportFilters.from_dict(snapshot.filters)
    total = export_selectors.export_target_count(judge=judge, filters=filters)
    final = snapshot_path(snapshot)
    final.parent.mkdir(parents=True, exist_ok=True)
    partial = final.with_name(final.name + ".partial")
    tally = _Tally()
    try:
        handle: Any = None
        try:
            if snapshot.format == "parquet":
                writer: Any = _ParquetWriter(partial, judge)
            else:
                writer_class = {"jsonl": _JsonlWriter, "csv": _CsvWriter, "eva": _EvaWriter}[snapshot.format]
                if writer_class.binary:
                    handle = partial.open("wb", buffering=HASH_BLOCK)
                else:
                    handle = partial.open("w", encoding="utf-8", newline="", buffering=HASH_BLOCK)
                writer = writer_class(handle, judge)
            next_progress = PROGRESS_EVERY_ROWS
            for chunk in export_selectors.export_rows(judge=judge, filters=filters, chunk_size=chunk_size):
                for row in chunk:
                    writer.write(row)
                    tally.add(row)
                if tally.rows >= next_progress:
                    _progress(snapshot_id, tally.rows, total)
                    next_progress = tally.rows + PROGRESS_EVERY_ROWS
            writer.close()
            tally.non_finite = writer.finite.count
        finally:
            if handle is not None:
                handle.close()
        sha256 = file_sha256(partial)
        size = partial.stat().st_size
        os.replace(partial, final)
        datasheet = _datasheet(snapshot, judge, tally, sha256, size)
        sheet_path = final.with_name(datasheet_name(snapshot))
        sheet_partial = sheet_path.with_name(sheet_path.name + ".partial")
        sheet_partial.write_text(
            json.dumps(datasheet, ensure_ascii=False, indent=2, allow_nan=False) + "\n", encoding="utf-8"
        )
        os.replace(sheet_partial, sheet_path)
    except Exception as exc:
        partial.unlink(missing_ok=True)
        snapshot_fail(snapshot_id=snapshot_id, error=f"{type(exc).__name__}: {exc}")
        raise
    ExportSnapshot.objects.filter(pk=snapshot_id).update(
        status=ExportSnapshot.Status.DONE,
        progress=100,
        row_count=tally.rows,
        sha256=sha256,
        file_path=str(final.relative_to(Path(settings.MEDIA_ROOT))),
        datasheet=datasheet,
    )
    snapshot.refresh_from_db()
    log.info("export %s v%s: %d rows, sha256 %s", snapshot.name, snapshot.version, tally.rows, sha256)
    return snapshot


def snapshot_fail(*, snapshot_id: int, error: str) -> None:
    ExportSnapshot.objects.filter(pk=snapshot_id).exclude(status=ExportSnapshot.Status.DONE).update(
        status=ExportSnapshot.Status.FAILED, error=error[:5000]
    )
