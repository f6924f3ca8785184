"""The flat export rows (JSONL, CSV, Parquet), streamed from the database in order.

PostgreSQL: one statement (`selectors.export_sql.postgres_statement`) gives each row everything it
writes: the winning gold label with its conversation, dataset and turn, the context as JSON text,
and the reviews, adjudication, comments and verdicts as JSON. It is read with psycopg's stream, so
the database builds rows while Python writes them (a server-side cursor in autocommit is WITH
HOLD: PostgreSQL would finish the whole result before the first fetch). Python decodes the nested
JSON with orjson, puts pseudonyms in place of user ids, gives the ratings back as floats, and
passes the context on as an orjson Fragment, written as it is.

SQLite: one statement for the rows with their reviews, adjudication and comments, and two more
queries, the export's turns and its verdicts by conversation, grouped one conversation at a time
as the rows reach them (`_PerConversation`).

The values written are the same on both, and the same as `export_rows` gives.
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from contextlib import closing, nullcontext
from itertools import accumulate, batched, groupby
from operator import itemgetter
from typing import Any

import orjson
from django.db import connection
from django.db.models import F, Func, IntegerField, QuerySet, Window
from django.db.models.functions import RowNumber
from orjson import Fragment

from reviewapp.exports.selectors import export_filters, export_sql
from reviewapp.exports.selectors.export_filters import ExportFilters, pseudonym
from reviewapp.exports.selectors.export_rows import json_text
from reviewapp.exports.selectors.export_sql import postgres_lines_statement, postgres_statement, sqlite_statement
from reviewapp.models import Judge, Turn, Verdict
from reviewapp.quality.selectors.gold import gold_rank_ordering


def json_value(text: str) -> Any:
    """orjson, or the standard parser for JSON text stored before NaN was refused (SQLite keeps it)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


# A verdict as the exports write it: each key with the column it is read from (flags as JSON text).
VERDICT_COLUMNS = {
    "sweep": "sweep_id",
    "run": "run_index",
    "tier": "tier",
    "status": "status",
    "rating": "rating",
    "label": "label",
    "passed": "passed",
    "flags": "flags_text",
    "explanation": "explanation",
}


def _verdict_dict(verdict: dict[str, Any]) -> dict[str, Any]:
    written = {key: verdict[column] for key, column in VERDICT_COLUMNS.items()}
    written["flags"] = json_value(written["flags"])
    return written


def verdicts_of(judge: Judge, conversations: QuerySet) -> QuerySet:
    """The judge's verdicts on the export's conversations, by conversation, version, sweep and run."""
    return (
        Verdict.objects.filter(judge_version__judge=judge, conversation_id__in=conversations)
        .annotate(flags_text=json_text("flags"), version=F("judge_version__version"))
        .values("conversation_id", "turn_id", "version", *VERDICT_COLUMNS.values())
        .order_by("conversation_id", "judge_version_id", "sweep_id", "run_index", "id")
    )


def verdicts_by_target(verdicts: Iterable[dict[str, Any]]) -> dict[int | None, dict[str, list[dict[str, Any]]]]:
    """One conversation's verdicts (from `verdicts_of`) by target (turn id, None for the conversation),
    then by version: each target's versions in the order they were created."""
    by_target: dict[int | None, dict[str, list[dict[str, Any]]]] = {}
    for verdict in verdicts:
        by_target.setdefault(verdict["turn_id"], {}).setdefault(verdict["version"], []).append(_verdict_dict(verdict))
    return by_target


def _winning_gold(judge, filters: ExportFilters) -> tuple[str, tuple]:
    """The export's gold labels, each with its rank among its target's labels (1 wins)."""
    labels = (
        export_filters.gold_labels_for(judge=judge, filters=filters)
        .annotate(
            source_rank=Window(
                RowNumber(),
                partition_by=[F("conversation_id"), F("turn_id")],
                order_by=gold_rank_ordering(),
            )
        )
        .order_by()
        .values(*export_filters.GOLD_COLUMNS, "failure_modes", "created_at", "source_rank")
    )
    return labels.query.sql_with_params()


def _float(value: Any) -> float | None:
    return None if value is None else float(value)  # "NaN", "Infinity", "Inf" -> the float


def _people(text: str, person: str) -> list[dict[str, Any]]:
    """Decoded JSON objects with a pseudonym in place of the user id under `person`."""
    if text == "[]":
        return []
    entries = orjson.loads(text)
    for entry in entries:
        entry[person] = pseudonym(entry[person])
    return entries


def _reviews(text: str) -> list[dict[str, Any]]:
    reviews = _people(text, "reviewer")
    for review in reviews:
        review["rating"] = _float(review["rating"])
    return reviews


def _adjudication(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    adjudication = orjson.loads(text)
    adjudication["lead"] = pseudonym(adjudication["lead"])
    adjudication["rating"] = _float(adjudication["rating"])
    return adjudication


class _PerConversation(ABC):
    """What the rows draw from a query that streams by conversation beside them: the query's rows
    are grouped by conversation and each group is made into what its rows need (`load`) when the
    first of them reaches it. Only one conversation's is held."""

    def __init__(self, rows: Iterable, conversation_of) -> None:
        self.groups = groupby(rows, conversation_of)  # (conversation id, its rows), in id order
        self.next = next(self.groups, None)
        self.conversation_id: int | None = None

    def _take(self, conversation_id: int) -> list:
        while self.next is not None and self.next[0] < conversation_id:
            self.next = next(self.groups, None)
        if self.next is None or self.next[0] != conversation_id:
            return []
        rows = list(self.next[1])
        self.next = next(self.groups, None)
        return rows

    def of(self, conversation_id: int, target: int | None) -> Any:
        if conversation_id != self.conversation_id:
            self.conversation_id = conversation_id
            self.load(self._take(conversation_id))
        return self.lookup(target)

    @abstractmethod
    def load(self, rows: list) -> None:
        """Hold what one conversation's streamed rows say, for `lookup`."""

    @abstractmethod
    def lookup(self, target: int | None) -> Any:
        """What a row of the held conversation gets: its target is a turn position or id, or None."""


class _Context(_PerConversation):
    """A row's context from the turns of its conversation (by position): the turns before the row's
    (the last `CONTEXT_TURNS` of them), or the whole conversation for a conversation-level row."""

    def load(self, rows: list[tuple[int, int, str, str]]) -> None:
        self.rows = rows

    def lookup(self, position: int | None) -> list[dict[str, Any]]:
        rows = self.rows
        if position is not None:
            end = bisect_left(rows, position, key=itemgetter(1))
            rows = rows[max(0, end - export_filters.CONTEXT_TURNS) : end]
        return [{"position": p, "role": role, "text": text} for _, p, role, text in rows]


class _Verdicts(_PerConversation):
    """A row's verdicts by version, from the conversation's verdicts (`verdicts_of`)."""

    def load(self, rows: list[dict[str, Any]]) -> None:
        self.by_target = verdicts_by_target(rows)

    def lookup(self, turn_id: int | None) -> dict[str, list[dict[str, Any]]]:
        return self.by_target.get(turn_id, {})


def _conversations(judge, filters: ExportFilters) -> QuerySet:
    """The ids of the export's conversations (with repeats: the conversation of every label)."""
    return export_filters.gold_labels_for(judge=judge, filters=filters).values("conversation_id")


TURNS_PER_ROW = 8  # the turns stream is read in bigger chunks: a row's context holds several turns


def _turns(conversations: QuerySet) -> QuerySet:
    """The turns of the export's conversations, by conversation then position."""
    return (
        Turn.objects.filter(conversation_id__in=conversations)
        .order_by("conversation_id", "position")
        .values_list("conversation_id", "position", "role", "text")
    )


def _postgres_gold(judge, filters: ExportFilters) -> tuple[str, tuple]:
    """Each target's winning gold label (DISTINCT ON in the shared rank order), by conversation and turn."""
    return _gold_sql(export_filters.gold_labels_for(judge=judge, filters=filters))


def postgres_gold_between(judge, filters: ExportFilters, first: int, end: int) -> tuple[str, tuple]:
    """`_postgres_gold` for the conversations with ids from `first` up to (not with) `end`: bounded
    by their blocks too, so a walk of `gold_judge_block` reads those blocks alone."""
    per = export_sql.CONVERSATIONS_PER_BLOCK
    labels = (
        export_filters.gold_labels_for(judge=judge, filters=filters)
        .alias(block=F("conversation_id") / per)
        .filter(
            block__gte=first // per, block__lte=(end - 1) // per, conversation_id__gte=first, conversation_id__lt=end
        )
    )
    return _gold_sql(labels)


def _gold_sql(labels) -> tuple[str, tuple]:
    """Each target's winning gold label among `labels`, with its `block` (its conversation's id over
    CONVERSATIONS_PER_BLOCK), in the order every statement reads them: by block, conversation and
    turn (one order, since a block is a range of conversation ids). Off the index `gold_judge_block`
    (migration 0025) as it is walked, so the first rows leave the database at once
    (`export_sql.postgres_winning_gold`); two sorts of every label came first before (0.14 s for
    200,000, on disk past work_mem at a million)."""
    rank, _ = gold_rank_ordering()
    columns = (*export_filters.GOLD_COLUMNS, "failure_modes", "created_at")
    labels_sql, params = (
        labels.order_by().annotate(gold_rank=rank.expression).values(*columns, "gold_rank").query.sql_with_params()
    )
    return export_sql.postgres_winning_gold(labels_sql, columns), params


def _verdicts(text: str | None) -> dict[str, list[dict[str, Any]]]:
    """The row's verdicts from the statement's [version, verdict] pairs, by version; ratings as floats."""
    by_version: dict[str, list[dict[str, Any]]] = {}
    if text is None:
        return by_version
    for version, verdict in orjson.loads(text):
        verdict["rating"] = _float(verdict["rating"])
        by_version.setdefault(version, []).append(verdict)
    return by_version


# For the streamed statement only: JIT compiling its hundred-odd expressions cost more CPU than it
# saved (2.3 s of 6.6 s at 100,000 rows), and the context arrays rely on one process reading each
# conversation's turns in order (a parallel plan would not).
STREAM_SETTINGS = "SET jit = off; SET max_parallel_workers_per_gather = 0"
STREAM_RESET = "RESET jit; RESET max_parallel_workers_per_gather"


def _streamed(statement: str, params: tuple, chunk_size: int) -> Iterator[tuple]:
    """The statement's rows as the database sends them (psycopg's stream: no cursor held on the
    server, no result materialised first), so the database builds rows while Python writes them.
    The connection is busy until the last row: nothing else can run on it meanwhile."""
    with connection.cursor() as cursor:
        cursor.execute(STREAM_SETTINGS)
        try:
            with connection.wrap_database_errors:
                log = getattr(cursor, "debug_sql", None)  # the debug cursor records it, as execute() would
                with log(statement, params) if log else nullcontext():
                    yield from cursor.cursor.stream(statement, params, size=chunk_size)
        finally:
            cursor.execute(STREAM_RESET)


def _flat_row(slug: str, record: tuple, context: Any, verdicts: Any) -> dict[str, Any]:
    """One flat row from the first eighteen columns both statements select, with its context and verdicts."""
    (
        _conversation_id, _turn_id, source, rating, label, passed, failure_modes, labelled_at, external_id,
        language, dataset, position, role, text, intended_text, reviews, adjudication, comments,
    ) = record[:18]  # fmt: skip
    return {
        "dataset": dataset,
        "conversation_id": external_id,
        "language": language,
        "judge": slug,
        "level": "conversation" if position is None else "turn",
        "turn_position": position,
        "turn_role": role,
        "text": text,
        "intended_text": intended_text or None,
        "context": context,
        "gold_rating": rating,
        "gold_label": label or None,
        "gold_passed": None if passed is None else bool(passed),  # SQLite gives 0 or 1
        "gold_failure_modes": list(json_value(failure_modes) or []),
        "gold_source": source,
        "gold_labelled_at": labelled_at,
        "adjudication": _adjudication(adjudication),
        "reviews": _reviews(reviews),
        "comments": _people(comments, "author"),
        "verdicts": verdicts,
    }


def _postgres_rows(judge, filters: ExportFilters, chunk_size: int) -> Iterator[list[dict[str, Any]]]:
    statement, params = postgres_statement(int(judge.pk), _postgres_gold(judge, filters))
    slug = judge.slug
    for records in batched(_streamed(statement, params, chunk_size), chunk_size):
        # The context is JSON text, written as it is; the verdicts come as JSON pairs.
        yield [_flat_row(slug, record, Fragment(record[18]), _verdicts(record[19])) for record in records]


def flat_rows(
    *, judge, filters: ExportFilters, chunk_size: int = export_filters.CHUNK_SIZE
) -> Iterator[list[dict[str, Any]]]:
    """The export's flat rows (the columns of `services.export_writers.COLUMNS`) in chunks of
    `chunk_size`, ordered by conversation then turn: on PostgreSQL one streamed statement, on SQLite
    three queries at any size (the rows, the turns their context comes from, their verdicts)."""
    if connection.vendor == "postgresql":
        yield from _postgres_rows(judge, filters, chunk_size)
        return
    gold, conversations = _winning_gold(judge, filters), _conversations(judge, filters)
    statement, params = sqlite_statement(int(judge.pk), gold)
    slug = judge.slug
    turns = _turns(conversations).iterator(chunk_size=chunk_size * TURNS_PER_ROW)
    context_of = _Context(turns, itemgetter(0)).of
    verdicts_of_row = _Verdicts(
        verdicts_of(judge, conversations).iterator(chunk_size=chunk_size), itemgetter("conversation_id")
    ).of
    with connection.chunked_cursor() as cursor:
        cursor.execute(statement, params)
        while records := cursor.fetchmany(chunk_size):
            yield [
                _flat_row(slug, record, context_of(record[0], record[11]), verdicts_of_row(record[0], record[1]))
                for record in records
            ]


# --- PostgreSQL: the JSONL lines as the database writes them --------------------------------------------

# COPY's binary format: per row a field count, then each field's length and bytes (the line's
# datasheet key, then the JSONL line), as the database wrote them: no escapes to undo.
COPY_SIGNATURE = b"PGCOPY\n\xff\r\n\x00"
COPY_HEADER = len(COPY_SIGNATURE) + 8  # the signature, flags, the header extension's length (0)
COPY_END = b"\xff\xff"  # a field count of -1
# work_mem: where the planner sorts the gold labels after all (the range of a keep's batch, a filter
# that leaves the index), at 4 MB (the default) sorts of 100,000 labels or more spill to disk.
LINES_SETTINGS = STREAM_SETTINGS + "; SET extra_float_digits = 1; SET enable_hashagg = off; SET work_mem = '32MB'"
LINES_RESET = STREAM_RESET + "; RESET extra_float_digits; RESET enable_hashagg; RESET work_mem"
# The lines a JSONL chunk holds at most, in bytes, besides its `chunk_size` lines: a chunk is joined,
# its markers filled, hashed and written in turn, and a chunk that stays in the processor's cache
# (1 MiB) goes through those steps faster than one of several megabytes read back from memory each time.
LINES_CHUNK_BYTES = 1 << 20
# A marker of export_sql starts so: a quote, the control character, then its kind (f, p, j or m), its text.
_MARK_BYTE = export_sql.MARK.encode()
MARK = b'"' + _MARK_BYTE


class _Marks:
    """What Python writes in place of a marker (`export_sql`): a pseudonym, a rating orjson spells
    otherwise (non-finite ones as null, counted by `finite`), stored JSON re-encoded."""

    def __init__(self, finite) -> None:
        self.finite = finite
        self.people: dict[bytes, bytes] = {}  # a pseudonym's marker text: its JSON (a few reviewers, many rows)

    def value(self, kind: bytes, text: bytes) -> bytes:
        if kind == b"p":
            found = self.people.get(text)
            if found is None:
                found = self.people[text] = orjson.dumps(pseudonym(int(text)))
            return found
        if kind == b"f":
            return orjson.dumps(self.finite.clean(float(text)))
        value = json_value(bytes.fromhex(text.decode()).decode())
        if kind == b"m":  # failure modes, read as the flat row reads them
            value = list(value or [])
        return orjson.dumps(self.finite.clean(value))

    def fill(self, data: bytes) -> bytes:
        """`data` (JSON text: lines, or a JSON column's value) with each marker, from its opening quote
        to its closing one, replaced by its value. Each is found by its control character alone, a
        byte JSON text holds nowhere else (`export_sql.MARK`): `find` of one byte runs at memory speed."""
        at = data.find(_MARK_BYTE)
        if at < 0:
            return data
        filled, start, find = [], 0, data.find
        while at >= 0:
            if data[at - 1 : at] != b'"':  # every marker opens with a quote: anything else is not one of ours
                raise ValueError(f"a control character at byte {at} that opens no marker")
            end = data.index(b'"', at + 2)
            filled += (data[start : at - 1], self.value(data[at + 1 : at + 2], data[at + 2 : end]))
            start = end + 1
            at = find(_MARK_BYTE, start)
        filled.append(data[start:])
        return b"".join(filled)


def _unheaded(data: bytes, skip: int) -> memoryview:
    """The rows of COPY binary data, past its header when `skip` says it starts there."""
    if skip and not data.startswith(COPY_SIGNATURE):
        raise ValueError("COPY did not send its binary header")
    return memoryview(data)[skip:]


def _two_fields(data: memoryview, rows: list[tuple[memoryview, memoryview]]) -> int:
    """The whole rows at the start of `data` (COPY binary, two fields each) put at the end of `rows`,
    as views of `data` (not copies: a block of lines is copied once, into its chunk); gives how many
    bytes they took."""
    at, size = 0, len(data)
    while at + 6 <= size and data[at : at + 2] != COPY_END:
        value_at = at + 6 + int.from_bytes(data[at + 2 : at + 6])
        if value_at + 4 > size:
            break
        end = value_at + 4 + int.from_bytes(data[value_at : value_at + 4])
        if end > size:
            break
        rows.append((data[at + 6 : value_at], data[value_at + 4 : end]))
        at = end
    return at


def _copied(statement: str, params: tuple, using) -> Iterator[list[tuple[memoryview, memoryview]]]:
    """The rows of a statement of two text columns, read with `COPY ... TO STDOUT (FORMAT binary)`
    under LINES_SETTINGS: the whole rows of each message as they come (the header may come apart)."""
    statement = f"COPY ({statement}) TO STDOUT (FORMAT binary)"
    with using.cursor() as cursor:
        cursor.execute(LINES_SETTINGS)
        try:
            with using.wrap_database_errors:
                log = getattr(cursor, "debug_sql", None)  # the debug cursor records it, as execute() would
                with log(statement, params) if log else nullcontext(), cursor.cursor.copy(statement, params) as copy:
                    tail, skip = b"", COPY_HEADER
                    for message in copy:
                        if len(tail) + len(message) < skip:
                            tail += message
                            continue
                        data, rows = _unheaded(tail + message if tail or skip else message, skip), []
                        used = _two_fields(data, rows)
                        tail, skip = bytes(data[used:]), 0
                        if rows:
                            yield rows
                    if skip or tail != COPY_END:
                        raise ValueError("COPY ended inside a row")
        finally:
            cursor.execute(LINES_RESET)


def _chunk(parts: list, keys: list[bytes], marks: _Marks) -> tuple[bytes, list[bytes]]:
    """Whole blocks of lines (`parts`: each block, then a newline) as one chunk of JSONL, and their keys."""
    return marks.fill(b"".join(parts)), keys


KEPT_SAMPLE = 512  # gold labels looked at to tell how much of an export is kept


def postgres_kept_share(*, judge, filters: ExportFilters, total: int) -> float:
    """About what share of the export's `total` rows have a current kept line (0 to 1), from about
    KEPT_SAMPLE gold labels across the whole table, those whose id hashes to 0 modulo k
    (PostgreSQL's `hashint8`: a sample by the id itself would follow any pattern the ids have, every
    tenth conversation, say): one statement, a scan of the judge's gold labels and a lookup by index
    per sampled label. The export reads its rows on one connection or two by it (`services.exports`)."""
    step = max(1, total // KEPT_SAMPLE)
    labels = (
        export_filters.gold_labels_for(judge=judge, filters=filters)
        .order_by()
        .annotate(sampled=Func(F("id"), function="hashint8", output_field=IntegerField()) % step)
        .filter(sampled=0)
        .values("conversation_id")[: KEPT_SAMPLE * 2]
    )
    labels_sql, labels_params = labels.query.sql_with_params()
    with connection.cursor() as cursor:
        cursor.execute(export_sql.kept_share_statement(labels_sql), [int(judge.pk), *labels_params])
        sampled, kept = cursor.fetchone()
    return kept / sampled if sampled else 0.0


def _kept_statement(judge, filters: ExportFilters, *, rows, blocks: bool, columns: bool) -> tuple[str, tuple]:
    """The statement of `postgres_lines` (or, with `columns`, `postgres_csv`): rows kept or built, or
    with `blocks` (the whole export only) the kept blocks where current."""
    if blocks and rows != (0, None):
        raise ValueError("kept blocks are read for the whole export only")
    gold = _postgres_gold(judge, filters)
    if blocks:
        return export_sql.postgres_blocks_statement(int(judge.pk), gold, judge.slug, columns=columns)
    return postgres_lines_statement(int(judge.pk), gold, judge.slug, columns=columns, rows=rows, kept=True)


def postgres_lines(
    *,
    judge,
    filters: ExportFilters,
    finite,
    chunk_size: int = export_filters.CHUNK_SIZE,
    using=connection,
    rows: tuple[int, int | None] = (0, None),
    chunk_bytes: int = LINES_CHUNK_BYTES,
    blocks: bool = False,
):
    """The export's JSONL on PostgreSQL in chunks of `chunk_size` lines, as (the lines' bytes, their
    datasheet keys): the same bytes `flat_rows` and the JSONL writer give, written by the database
    (`export_sql.postgres_lines_statement`) and read with COPY, so Python only fills in the markers.
    A block's lines (CONVERSATIONS_PER_BLOCK conversations') come joined by newlines and go into the
    chunk as they are, split only where a chunk ends: each line is copied once, not split out and
    joined again (a kept line of the benchmark is 1-2 KB). A chunk also ends with the block that
    brings it to `chunk_bytes` (LINES_CHUNK_BYTES). `finite` counts the non-finite numbers
    written as null. `using`: the connection to read on; `rows`: a part of the rows (first, count or
    None for the rest). With `blocks` (the whole export only), the kept blocks of conversations are
    read where current (`export_sql.postgres_blocks_statement`): the same bytes, one lookup a block
    instead of two a row."""
    statement, params = _kept_statement(judge, filters, rows=rows, blocks=blocks, columns=False)
    marks, parts, keys, size = _Marks(finite), [], [], 0
    with closing(_copied(statement, params, using)) as messages:
        for message in messages:  # each row: the keys and the lines of a block of rows, one a line
            for key_block, line_block in message:
                block_keys = bytes(key_block).split(b"\n")
                while len(keys) + len(block_keys) >= chunk_size:  # a chunk ends in this block
                    take = chunk_size - len(keys)
                    if take == len(block_keys):
                        parts += (line_block, b"\n")
                        keys += block_keys
                        line_block, block_keys = b"", []
                    else:  # only here are a block's lines split, at the chunk's end
                        data, end = bytes(line_block), -1
                        for _ in range(take):
                            end = data.index(b"\n", end + 1)
                        parts.append(data[: end + 1])
                        keys += block_keys[:take]
                        line_block, block_keys = data[end + 1 :], block_keys[take:]
                    yield _chunk(parts, keys, marks)
                    parts, keys, size = [], [], 0
                if block_keys:
                    parts += (line_block, b"\n")
                    keys += block_keys
                    size += len(line_block) + 1
                    if size >= chunk_bytes:
                        yield _chunk(parts, keys, marks)
                        parts, keys, size = [], [], 0
    if keys:
        yield _chunk(parts, keys, marks)


# --- PostgreSQL: the Parquet columns as the database writes them ------------------------------------------


# The columns that can hold markers: JSON built from people and ratings, or stored JSON. (Not the
# text columns: a text may hold what looks like one.)
MARKED_COLUMNS = ("gold_failure_modes", "adjudication", "reviews", "comments", "verdicts")


def _strings(values: list[bytes]):
    """UTF-8 values as an Arrow string array, built from its buffers: `pa.array` on a Python list
    would first import pandas (0.2-0.3 s, once per process) to check it is not a pandas object."""
    import pyarrow as pa

    offsets = array("q", accumulate((len(value) for value in values), initial=0))
    data = pa.py_buffer(b"".join(values))
    return pa.LargeStringArray.from_buffers(len(values), pa.py_buffer(offsets), data).cast(pa.string())


def _csv_table(blocks: list, marks: _Marks, csv_options):
    """Rows of CSV (taken out of `blocks`) as an Arrow table, the markers filled in."""
    import pyarrow.compute as pc
    from pyarrow import BufferReader, csv

    data = b"".join(blocks)
    blocks.clear()  # the rows' buffers go before the table is built: one copy of the rows at a time
    table = csv.read_csv(BufferReader(data), *csv_options)
    del data
    for name in MARKED_COLUMNS:
        column = table.column(name)
        found = pc.match_substring(column, MARK.decode())
        marked = pc.and_kleene(found, pc.is_valid(found))  # null (no value) as false, without a scalar
        if not pc.any(marked).as_py():
            continue  # the column as parsed, not copied into one chunk
        column, marked = column.combine_chunks(), marked.combine_chunks()
        # Only the values with a marker go through Python (a third of the reviews in the bench's
        # workload); the others stay in Arrow as they are.
        filled = _strings([marks.fill(value.encode()) for value in column.filter(marked).to_pylist()])
        table = table.set_column(table.schema.get_field_index(name), name, pc.replace_with_mask(column, marked, filled))
    return table


def _csv_rows_end(data: bytes, rows: int) -> int:
    """Where the first `rows` CSV rows of `data` end: after the newline that ends each, the first
    with an even number of quotes before it (every field is quoted and its quotes doubled, so a
    newline inside a value has an odd number before it)."""
    end = quotes = 0
    for _ in range(rows):
        while True:
            newline = data.index(b"\n", end)
            quotes += data.count(b'"', end, newline)
            end = newline + 1
            if not quotes % 2:
                break
    return end


def postgres_csv(
    *,
    judge,
    filters: ExportFilters,
    rows_per_table: int,
    bytes_per_table: int | None = None,
    using=connection,
    rows=(0, None),
    blocks: bool = False,
):
    """The export's flat columns on PostgreSQL as CSV, `rows_per_table` rows at a time, or fewer once
    `bytes_per_table` of CSV are in (at the end of a block): a list of pieces of whole rows, the
    datasheet key, then the columns, written by the database
    (`export_sql.postgres_lines_statement(columns=True)`) a block of conversations at a time, a row
    kept with its line read from there (ExportLine). A block that a table ends inside is split at
    that row (`_csv_rows_end`). `using` and `rows` as for `postgres_lines`; with `blocks` (the whole
    export only), the kept blocks' CSV rows are read where current (`export_sql.postgres_blocks_statement`)."""
    statement, params = _kept_statement(judge, filters, rows=rows, blocks=blocks, columns=True)
    table, counted, size = [], 0, 0
    with closing(_copied(statement, params, using)) as messages:
        for message in messages:  # each row: a count of CSV rows, and those rows
            for count, block in message:
                count = int(bytes(count))
                while counted + count > rows_per_table:  # the table ends inside this block
                    take = rows_per_table - counted
                    data = bytes(block)
                    end = _csv_rows_end(data, take)
                    table.append(data[:end])
                    yield table
                    table, counted, size, block, count = [], 0, 0, data[end:], count - take
                if count:
                    table.append(block)
                    counted += count
                    size += len(block)
                if counted == rows_per_table or (bytes_per_table and size >= bytes_per_table):
                    yield table
                    table, counted, size = [], 0, 0
    if table:
        yield table


class CsvTables:
    """Arrow tables of the flat columns (`schema`) from `postgres_csv`'s rows, parsed by pyarrow's
    CSV reader, so no Python object is made per row; `finite` counts the non-finite numbers of the
    nested columns written as null (a non-finite gold rating comes as NULL, its key tells)."""

    def __init__(self, *, finite, schema) -> None:
        import pyarrow as pa
        from pyarrow import csv

        self.marks = _Marks(finite)
        self.options = (
            csv.ReadOptions(column_names=["key", *schema.names], use_threads=False),
            csv.ParseOptions(newlines_in_values=True),
            csv.ConvertOptions(
                column_types={"key": pa.string(), **{field.name: field.type for field in schema}},
                null_values=[""], strings_can_be_null=True, quoted_strings_can_be_null=False,
                true_values=["t"], false_values=["f"],
            ),
        )  # fmt: skip

    def __call__(self, blocks: list) -> tuple[Any, list[str]]:
        """One table and its rows' datasheet keys, from rows of CSV (taken out of `blocks`)."""
        table = _csv_table(blocks, self.marks, self.options)
        return table.drop_columns(["key"]), table.column("key").to_pylist()
