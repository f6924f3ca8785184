"""The flat export rows (JSONL, CSV, Parquet) from two queries, read through server-side cursors.

One statement returns one row per labelled target: the winning gold label (ranked by a window over
the target's labels, by the shared source order then id, as `selectors.gold.winning_label` ranks
them) joined with its conversation, dataset and turn, and the nested values (reviews, adjudication,
comments, verdicts) built as JSON by the database (`selectors.export_sql`). Python decodes that
JSON with orjson, puts pseudonyms in place of user ids and gives the ratings back as floats.

The context (the turns before a turn, or the whole conversation) comes from the second query: the
export's turns by conversation and position, taken one conversation at a time beside the rows
(`_Context`). Building it in Python as the turns stream costs far less than building every row's
context window as JSON in the database, which ranked and sorted every turn of every target.

PostgreSQL reads each query through a named (server-side) cursor, `fetchmany(chunk_size)` at a
time; SQLite steps through them the same way. The values written are the same as `export_rows` gives.
"""

from __future__ import annotations

import json
from bisect import bisect_left
from collections.abc import Iterable, Iterator
from itertools import groupby
from operator import itemgetter
from typing import Any

import orjson
from django.db import connection
from django.db.models import F, QuerySet, Window
from django.db.models.functions import RowNumber

from reviewapp.exports.selectors import export_filters
from reviewapp.exports.selectors.export_filters import ExportFilters, pseudonym
from reviewapp.exports.selectors.export_sql import postgres_statement, sqlite_statement
from reviewapp.models import Turn
from reviewapp.quality.selectors.gold import gold_rank_ordering


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


def _loads(text: str) -> Any:
    """orjson, or the standard parser for JSON text stored before NaN was refused (SQLite keeps it)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


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


def _verdicts(text: str) -> dict[str, list[dict[str, Any]]]:
    if text == "{}":
        return {}
    verdicts = orjson.loads(text)
    for runs in verdicts.values():
        for verdict in runs:
            verdict["rating"] = _float(verdict["rating"])
            verdict["flags"] = _loads(verdict["flags"])
    return verdicts


class _Context:
    """The context of each row from the turns of its conversation, which stream by conversation and
    position beside the rows: the turns before the row's (the last `CONTEXT_TURNS` of them), or the
    whole conversation for a conversation-level row. Only one conversation's turns are held."""

    def __init__(self, turns: Iterable[tuple[int, int, str, str]]) -> None:
        self.conversations = groupby(turns, itemgetter(0))  # (conversation id, its turns), in id order
        self.next = next(self.conversations, None)
        self.conversation_id: int | None = None
        self.turns: list[dict[str, Any]] = []
        self.positions: list[int] = []

    def of(self, conversation_id: int, position: int | None) -> list[dict[str, Any]]:
        if conversation_id != self.conversation_id:
            self.conversation_id, rows = conversation_id, []
            while self.next is not None and self.next[0] < conversation_id:
                self.next = next(self.conversations, None)
            if self.next is not None and self.next[0] == conversation_id:
                rows = list(self.next[1])
                self.next = next(self.conversations, None)
            self.turns = [{"position": p, "role": role, "text": text} for _, p, role, text in rows]
            self.positions = [row[1] for row in rows]
        if position is None:
            return self.turns
        end = bisect_left(self.positions, position)
        return self.turns[max(0, end - export_filters.CONTEXT_TURNS) : end]


def _conversations(judge, filters: ExportFilters) -> QuerySet:
    """The ids of the export's conversations (with repeats: the conversation of every label)."""
    return export_filters.gold_labels_for(judge=judge, filters=filters).values("conversation_id")


def _turns(conversations: QuerySet, chunk_size: int) -> Iterator[tuple[int, int, str, str]]:
    """The turns of the export's conversations, by conversation then position."""
    turns = (
        Turn.objects.filter(conversation_id__in=conversations)
        .order_by("conversation_id", "position")
        .values_list("conversation_id", "position", "role", "text")
    )
    return turns.iterator(chunk_size=chunk_size)


def flat_rows(
    *, judge, filters: ExportFilters, chunk_size: int = export_filters.CHUNK_SIZE
) -> Iterator[list[dict[str, Any]]]:
    """The export's flat rows (the columns of `services.export_writers.COLUMNS`) in chunks of
    `chunk_size`, ordered by conversation then turn: two queries at any size, the rows and the turns
    their context comes from."""
    gold, conversations = _winning_gold(judge, filters), _conversations(judge, filters)
    if connection.vendor == "postgresql":
        statement, params = postgres_statement(int(judge.pk), gold, conversations.query.sql_with_params())
    else:
        statement, params = sqlite_statement(int(judge.pk), gold)
    slug, context_of = judge.slug, _Context(_turns(conversations, chunk_size)).of
    with connection.chunked_cursor() as cursor:
        cursor.execute(statement, params)
        while records := cursor.fetchmany(chunk_size):
            chunk = []
            for (
                conversation_id, source, rating, label, passed, failure_modes, labelled_at, external_id, language,
                dataset, position, role, text, intended_text, reviews, adjudication, comments, verdicts,
            ) in records:  # fmt: skip
                chunk.append(
                    {
                        "dataset": dataset,
                        "conversation_id": external_id,
                        "language": language,
                        "judge": slug,
                        "level": "conversation" if position is None else "turn",
                        "turn_position": position,
                        "turn_role": role,
                        "text": text,
                        "intended_text": intended_text or None,
                        "context": context_of(conversation_id, position),
                        "gold_rating": rating,
                        "gold_label": label or None,
                        "gold_passed": None if passed is None else bool(passed),
                        "gold_failure_modes": list(_loads(failure_modes) or []),
                        "gold_source": source,
                        "gold_labelled_at": labelled_at,
                        "adjudication": _adjudication(adjudication),
                        "reviews": _reviews(reviews),
                        "comments": _people(comments, "author"),
                        "verdicts": _verdicts(verdicts),
                    }
                )
            yield chunk
