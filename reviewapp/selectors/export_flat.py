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
from django.db.models import Case, F, IntegerField, Value, When, Window
from django.db.models.functions import RowNumber

from ..models import Adjudication, Comment, Review
from .export_filters import CHUNK_SIZE, CONTEXT_TURNS, SOURCE_PRIORITY, ExportFilters, gold_labels_for, pseudonym

FLOAT_MAX = "1.7976931348623157e308"


class _Postgres:
    """PostgreSQL's JSON: `json` (not `jsonb`) keeps the keys in the order they are built."""

    @staticmethod
    def obj(*pairs: str) -> str:
        return "json_build_object(" + ", ".join(pairs) + ")"

    @staticmethod
    def array(value: str, source: str, order: str, *, nested: bool = False, scalar: bool = False) -> str:
        cast = "" if nested else "::text"
        return f"(SELECT COALESCE(json_agg({value} ORDER BY {order}), '[]'::json){cast} {source})"

    @staticmethod
    def mapping(key: str, value: str, source: str, order: str) -> str:
        return f"(SELECT COALESCE(json_object_agg({key}, {value} ORDER BY {order}), '{{}}'::json)::text {source})"

    @staticmethod
    def one(value: str) -> str:
        return f"{value}::text"

    @staticmethod
    def iso(column: str) -> str:
        """Python's isoformat() of the UTC time: microseconds only when there are some."""
        utc = f"({column} AT TIME ZONE 'UTC')"
        return (
            f"to_char({utc}, 'YYYY-MM-DD\"T\"HH24:MI:SS') || "
            f"CASE WHEN to_char({utc}, 'US') = '000000' THEN '' ELSE to_char({utc}, '.US') END || '+00:00'"
        )

    @staticmethod
    def boolean(column: str) -> str:
        return column

    @staticmethod
    def number(column: str) -> str:
        return column  # non-finite floats come out as the strings "NaN", "Infinity", "-Infinity"

    @staticmethod
    def text(column: str) -> str:
        return f"{column}::text"

    @staticmethod
    def same(a: str, b: str) -> str:
        return f"{a} IS NOT DISTINCT FROM {b}"

    slug_order = 'cat.slug COLLATE "C"'  # code point order, as Python's sorted()


class _Sqlite:
    """SQLite's JSON1: aggregates follow the order of a sorted subquery; values that leave a subquery
    lose their JSON type, so nested ones are passed through json() again."""

    @staticmethod
    def obj(*pairs: str) -> str:
        return "json_object(" + ", ".join(pairs) + ")"

    @staticmethod
    def array(value: str, source: str, order: str, *, nested: bool = False, scalar: bool = False) -> str:
        item = "j" if scalar else "json(j)"
        built = (
            f"(SELECT COALESCE(json_group_array({item}), '[]') FROM (SELECT {value} AS j {source} ORDER BY {order}))"  # noqa: S608
        )
        return f"json({built})" if nested else built

    @staticmethod
    def mapping(key: str, value: str, source: str, order: str) -> str:
        return (
            f"(SELECT COALESCE(json_group_object(o.k, json(o.v)), '{{}}') "  # noqa: S608
            f"FROM (SELECT {key} AS k, {value} AS v {source} ORDER BY {order}) o)"
        )

    @staticmethod
    def one(value: str) -> str:
        return value

    @staticmethod
    def iso(column: str) -> str:
        return f"replace({column}, ' ', 'T') || '+00:00'"  # stored as UTC 'YYYY-MM-DD HH:MM:SS[.ffffff]'

    @staticmethod
    def boolean(column: str) -> str:
        return f"CASE WHEN {column} IS NULL THEN NULL WHEN {column} THEN json('true') ELSE json('false') END"

    @staticmethod
    def number(column: str) -> str:
        # SQLite writes infinities as bare Inf, which is not JSON: give them as text ("Inf", "-Inf").
        return (
            f"CASE WHEN {column} > {FLOAT_MAX} OR {column} < -{FLOAT_MAX} THEN CAST({column} AS TEXT) ELSE {column} END"
        )

    @staticmethod
    def text(column: str) -> str:
        return column

    @staticmethod
    def same(a: str, b: str) -> str:
        return f"{a} IS {b}"

    slug_order = "cat.slug"  # BINARY collation: code point order


def _slugs(sql, through, owner: str) -> str:
    """The sorted category slugs of one review, adjudication or comment (an M2M through table)."""
    field = through._meta.get_field("category")
    table = through._meta.db_table
    owner_column = next(f.column for f in through._meta.concrete_fields if f.is_relation and f is not field)
    source = (
        f"FROM {table} rc JOIN reviewapp_category cat ON cat.id = rc.{field.column} WHERE rc.{owner_column} = {owner}"
    )
    return sql.array("cat.slug", source, sql.slug_order, nested=True, scalar=True)


def _statement(sql, judge_id: int, gold_sql: str) -> str:
    context_pairs = ("'position'", "x.position", "'role'", "x.role", "'text'", "x.text")
    whole = sql.array(
        sql.obj(*context_pairs),
        "FROM (SELECT u.position, u.role, u.text FROM reviewapp_turn u WHERE u.conversation_id = g.conversation_id) x",
        "x.position",
    )
    before = sql.array(
        sql.obj(*context_pairs),
        "FROM (SELECT u.position, u.role, u.text FROM reviewapp_turn u WHERE u.conversation_id = g.conversation_id"  # noqa: S608
        f" AND u.position < t.position ORDER BY u.position DESC LIMIT {CONTEXT_TURNS}) x",
        "x.position",
    )
    target = (
        f"i.judge_id = {judge_id} AND i.conversation_id = g.conversation_id AND {sql.same('i.turn_id', 'g.turn_id')}"
    )
    reviews = sql.array(
        sql.obj(
            "'reviewer'", "r.reviewer_id", "'rating'", sql.number("r.rating"), "'label'", "r.label",
            "'passed'", sql.boolean("r.passed"), "'categories'", _slugs(sql, Review.categories.through, "r.id"),
            "'comment'", "r.comment", "'quoted_span'", "r.quoted_span", "'created_at'", sql.iso("r.created_at"),
        ),
        f"FROM reviewapp_review r JOIN reviewapp_reviewitem i ON i.id = r.item_id WHERE {target}",
        "r.id",
    )  # fmt: skip
    adjudication = sql.obj(
        "'lead'", "a.lead_id", "'rating'", sql.number("a.rating"), "'label'", "a.label",
        "'passed'", sql.boolean("a.passed"), "'categories'", _slugs(sql, Adjudication.categories.through, "a.id"),
        "'rationale'", "a.rationale",
    )  # fmt: skip
    adjudication = (
        f"(SELECT {sql.one(adjudication)} FROM reviewapp_adjudication a JOIN reviewapp_reviewitem i"  # noqa: S608
        f" ON i.id = a.item_id WHERE {target} ORDER BY a.id DESC LIMIT 1)"
    )  # the last decision of the target's item, as the object rows keep it
    comments = sql.array(
        sql.obj(
            "'author'", "m.author_id", "'turn_position'", "mt.position", "'body'", "m.body",
            "'categories'", _slugs(sql, Comment.categories.through, "m.id"), "'quoted_span'", "m.quoted_span",
            "'reply_to'", "m.parent_id", "'id'", "m.id", "'created_at'", sql.iso("m.created_at"),
        ),
        "FROM reviewapp_comment m JOIN reviewapp_turn mt ON mt.id = m.turn_id WHERE mt.conversation_id = g.conversation_id"
        f" AND (g.turn_id IS NULL OR m.turn_id = g.turn_id) AND (m.judge_id = {judge_id} OR m.judge_id IS NULL)",
        "m.created_at, m.id",
    )  # fmt: skip
    on_target = f"v.conversation_id = g.conversation_id AND {sql.same('v.turn_id', 'g.turn_id')}"
    runs = sql.array(
        sql.obj(
            "'sweep'", "v.sweep_id", "'run'", "v.run_index", "'tier'", "v.tier", "'status'", "v.status",
            "'rating'", sql.number("v.rating"), "'label'", "v.label", "'passed'", sql.boolean("v.passed"),
            "'flags'", sql.text("v.flags"), "'explanation'", "v.explanation",
        ),
        f"FROM reviewapp_verdict v WHERE v.judge_version_id = vv.id AND {on_target}",
        "v.sweep_id, v.run_index, v.id",
        nested=True,
    )  # fmt: skip
    versions = (
        "SELECT DISTINCT jv.id, jv.version FROM reviewapp_verdict v JOIN reviewapp_judgeversion jv"  # noqa: S608
        f" ON jv.id = v.judge_version_id WHERE jv.judge_id = {judge_id} AND {on_target}"
    )
    verdicts = sql.mapping("vv.version", runs, f"FROM ({versions}) vv", "vv.id")
    return (
        f"SELECT g.turn_id, g.source, g.rating, g.label, g.passed, {sql.text('g.failure_modes')},"  # noqa: S608
        f" {sql.iso('g.created_at')}, c.external_id, c.language, d.name,"
        f" t.position, t.role, t.text, t.intended_text,"
        f" CASE WHEN t.id IS NULL THEN {whole} ELSE {before} END, {reviews}, {adjudication}, {comments}, {verdicts}"
        f" FROM ({gold_sql}) g JOIN reviewapp_conversation c ON c.id = g.conversation_id"
        " JOIN reviewapp_dataset d ON d.id = c.dataset_id LEFT JOIN reviewapp_turn t ON t.id = g.turn_id"
        " WHERE g.source_rank = 1 ORDER BY g.conversation_id, g.turn_id"
    )


def _winning_gold(judge, filters: ExportFilters) -> tuple[str, tuple]:
    """The export's gold labels, each with its rank among its target's labels (1 wins)."""
    source_rank = Case(
        *(When(source=source, then=Value(rank)) for rank, source in enumerate(SOURCE_PRIORITY)),
        default=Value(len(SOURCE_PRIORITY)),
        output_field=IntegerField(),
    )
    labels = (
        gold_labels_for(judge=judge, filters=filters)
        .annotate(
            source_rank=Window(
                RowNumber(),
                partition_by=[F("conversation_id"), F("turn_id")],
                order_by=[source_rank.asc(), F("id").asc()],
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
    sql = _Postgres if connection.vendor == "postgresql" else _Sqlite
    statement = _statement(sql, int(judge.pk), gold_sql)
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
