"""The flat export rows (JSONL, CSV, Parquet) from one query, read through a server-side cursor.

One statement returns one finished row per labelled target: the winning gold label (ranked by a
window over the target's labels, by the shared source order then id, as `selectors.gold.winning_label`
ranks them) joined with its conversation, dataset and turn, and the nested values (context,
reviews, adjudication, comments, verdicts) built as JSON by the database in correlated subqueries.
Python only decodes that JSON with orjson, puts pseudonyms in place of user ids and gives the
ratings back as floats, so the cost per row stays a few microseconds; the database does the joins in
its own process while the rows stream.

PostgreSQL reads the statement through a named (server-side) cursor, `fetchmany(chunk_size)` at a
time; SQLite steps through it the same way. The SQL differs per database only in its JSON and date
functions (`_Postgres`, `_Sqlite`); the values written are the same as `export_rows` gives.

The statement is put together from fixed fragments and table names (hence the `noqa: S608`): the
only values in it are the judge's integer id and the filters, which go as query parameters.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import orjson
from django.db import connection
from django.db.models import F, Window
from django.db.models.functions import RowNumber

from reviewapp.exports.selectors.export_filters import (
    CHUNK_SIZE,
    ExportFilters,
    gold_labels_for,
    pseudonym,
)
from reviewapp.exports.selectors.export_sql import postgres_statement, sqlite_statement
from reviewapp.quality.selectors.gold import gold_rank_ordering


def _winning_gold(judge, filters: ExportFilters) -> tuple[str, tuple]:
    """The export's gold labels, each with its rank among its target's labels (1 wins)."""
    labels = (
        gold_labels_for(judge=judge, filters=filters)
        .annotate(
            source_rank=Window(
                RowNumber(),
                partition_by=[F("conversation_id"), F("turn_id")],
                order_by=gold_rank_ordering(),
            )
        )
        .order_by()
        .values(
            "id",
            "conversation_id",
            "turn_id",
            "source",
            "rating",
            "label",
            "passed",
            "failure_modes",
            "created_at",
            "source_rank",
        )
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


def _reviews(text: str) -> list[dict[str, Any]]:
    if text == "[]":
        return []
    reviews = orjson.loads(text)
    for review in reviews:
        review["reviewer"] = pseudonym(review["reviewer"])
        review["rating"] = _float(review["rating"])
    return reviews


def _adjudication(text: str | None) -> dict[str, Any] | None:
    if text is None:
        return None
    adjudication = orjson.loads(text)
    adjudication["lead"] = pseudonym(adjudication["lead"])
    adjudication["rating"] = _float(adjudication["rating"])
    return adjudication


def _comments(text: str) -> list[dict[str, Any]]:
    if text == "[]":
        return []
    comments = orjson.loads(text)
    for comment in comments:
        comment["author"] = pseudonym(comment["author"])
    return comments


def _verdicts(text: str) -> dict[str, list[dict[str, Any]]]:
    if text == "{}":
        return {}
    verdicts = orjson.loads(text)
    for runs in verdicts.values():
        for verdict in runs:
            verdict["rating"] = _float(verdict["rating"])
            verdict["flags"] = _loads(verdict["flags"])
    return verdicts


def flat_rows(*, judge, filters: ExportFilters, chunk_size: int = CHUNK_SIZE) -> Iterator[list[dict[str, Any]]]:
    """The export's flat rows (the columns of `services.export_writers.COLUMNS`) in chunks of
    `chunk_size`, ordered by conversation then turn: one query at any size."""
    gold_sql, params = _winning_gold(judge, filters)
    build = postgres_statement if connection.vendor == "postgresql" else sqlite_statement
    statement = build(int(judge.pk), gold_sql)
    slug, loads = judge.slug, orjson.loads
    with connection.chunked_cursor() as cursor:
        cursor.execute(statement, params)
        while records := cursor.fetchmany(chunk_size):
            chunk = []
            for (
                _turn_id, source, rating, label, passed, failure_modes, labelled_at, external_id, language, dataset,
                position, role, text, intended_text, context, reviews, adjudication, comments, verdicts,
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
                        "context": loads(context),
                        "gold_rating": rating,
                        "gold_label": label or None,
                        "gold_passed": None if passed is None else bool(passed),
                        "gold_failure_modes": list(_loads(failure_modes) or []),
                        "gold_source": source,
                        "gold_labelled_at": labelled_at,
                        "adjudication": _adjudication(adjudication),
                        "reviews": _reviews(reviews),
                        "comments": _comments(comments),
                        "verdicts": _verdicts(verdicts),
                    }
                )
            yield chunk
