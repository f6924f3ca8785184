"""The SQL of the flat export: one statement per database that returns its rows.

Both give, per labelled target, the winning gold label with its conversation, dataset and turn,
and the nested values built as JSON by the database: reviews, adjudication and comments (the same
JSON objects on both, `_objects`).

- PostgreSQL: the context and the verdicts too, everything a row writes, as lookups by index per
  row above the gold labels as they come off their index (`export_flat._gold_sql`), so the rows
  can be streamed as they are built (`postgres_statement`).
- SQLite: a correlated subquery per row (an index lookup in the same process, cheap there); JSON1's
  aggregates follow the order of a sorted subquery. The context and the verdicts come from two
  queries that `export_flat` streams beside the rows.

The statements are put together from fixed fragments and table names (hence the `noqa: S608`): the
only values in them are the judge's integer id and the filters, which go as query parameters.
"""

# ruff: noqa: S608 - fixed fragments and table names only; values go as query parameters (see above)
from __future__ import annotations

import functools
import hashlib
import re

import orjson

from reviewapp.exports.selectors.export_filters import CONTEXT_TURNS
from reviewapp.models import Adjudication, Comment, GoldLabel, Review, Turn, Verdict

FLOAT_MAX = "1.7976931348623157e308"


class _Dialect:
    """What both databases write the same way: a JSON object by their function of key, value pairs,
    and by default a column as it is."""

    object_function = ""

    @classmethod
    def obj(cls, *pairs: str) -> str:
        return f"{cls.object_function}({', '.join(pairs)})"

    @staticmethod
    def boolean(column: str) -> str:
        return column

    @staticmethod
    def number(column: str) -> str:
        return column

    @staticmethod
    def text(column: str) -> str:
        return column


class Postgres(_Dialect):
    """PostgreSQL's JSON: `json` (not `jsonb`) keeps the keys in the order they are built. Booleans
    and numbers go in as they are; non-finite floats come out as the strings "NaN", "Infinity"."""

    object_function = "json_build_object"

    @staticmethod
    def array(value: str, source: str, order: str, *, nested: bool = False, scalar: bool = False) -> str:
        cast = "" if nested else "::text"
        return f"(SELECT COALESCE(json_agg({value} ORDER BY {order}), '[]'::json){cast} {source})"

    @staticmethod
    def iso(column: str) -> str:
        """Python's isoformat() of the UTC time: microseconds only when there are some (one to_char:
        '.000000' can only be the fraction, the date and time around it have no dot)."""
        return (
            f"replace(to_char({column} AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.US'), '.000000', '') || '+00:00'"
        )

    @staticmethod
    def text(column: str) -> str:
        return f"{column}::text"

    slug_order = 'cat.slug COLLATE "C"'  # code point order, as Python's sorted()


class Sqlite(_Dialect):
    """SQLite's JSON1: aggregates follow the order of a sorted subquery; values that leave a subquery
    lose their JSON type, so nested ones are passed through json() again."""

    object_function = "json_object"

    @staticmethod
    def array(value: str, source: str, order: str, *, nested: bool = False, scalar: bool = False) -> str:
        item = "j" if scalar else "json(j)"
        built = (
            f"(SELECT COALESCE(json_group_array({item}), '[]') FROM (SELECT {value} AS j {source} ORDER BY {order}))"
        )
        return f"json({built})" if nested else built

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


def _objects(sql) -> dict[str, str]:
    """One review (r), adjudication (a) and comment (m on turn mt) as a JSON object,
    keys in the order the export writes them."""
    return {
        "review": sql.obj(
            "'reviewer'", "r.reviewer_id", "'rating'", sql.number("r.rating"), "'label'", "r.label",
            "'passed'", sql.boolean("r.passed"), "'categories'", _slugs(sql, Review.categories.through, "r.id"),
            "'comment'", "r.comment", "'quoted_span'", "r.quoted_span", "'created_at'", sql.iso("r.created_at"),
        ),
        "adjudication": sql.obj(
            "'lead'", "a.lead_id", "'rating'", sql.number("a.rating"), "'label'", "a.label",
            "'passed'", sql.boolean("a.passed"), "'categories'", _slugs(sql, Adjudication.categories.through, "a.id"),
            "'rationale'", "a.rationale",
        ),
        "comment": sql.obj(
            "'author'", "m.author_id", "'turn_position'", "mt.position", "'body'", "m.body",
            "'categories'", _slugs(sql, Comment.categories.through, "m.id"), "'quoted_span'", "m.quoted_span",
            "'reply_to'", "m.parent_id", "'id'", "m.id", "'created_at'", sql.iso("m.created_at"),
        ),
    }  # fmt: skip


def _select(sql, nested: str) -> str:
    """The columns `export_flat.flat_rows` reads, in its order; `nested` gives the three JSON ones."""
    return (
        f"SELECT g.conversation_id, g.turn_id, g.source, g.rating, g.label, g.passed, {sql.text('g.failure_modes')},"
        f" {sql.iso('g.created_at')}, c.external_id, c.language, d.name,"
        f" t.position, t.role, t.text, t.intended_text, {nested}"
    )


# The turns before a row's (the last CONTEXT_TURNS of them), or the whole conversation, as the JSON
# text orjson writes: to_json escapes text as orjson does, the pieces have no spaces.
_PIECE = """'{"position":' || x.position || ',"role":' || to_json(x.role) || ',"text":' || to_json(x.text) || '}'"""


def _context(piece: str) -> str:
    """The context of a row (`t`, of gold label `g`) as a JSON list of `piece`s, one per turn `x`.

    Most turns are numbered without gaps: when the CONTEXT_TURNS positions before a turn's (or all
    of them, near the start; positions are never negative) are all there, they are its context,
    read in index order (the aggregate takes the rows in the order of the index scan, no sort per
    row); otherwise (NULL) the second subquery finds them."""
    by_position = (
        f"SELECT CASE WHEN count(*) = least({CONTEXT_TURNS}, t.position) THEN '[' || string_agg({piece}, ',') || ']' END"
        " FROM (SELECT x.position, x.role, x.text FROM reviewapp_turn x WHERE x.conversation_id = g.conversation_id"
        f" AND x.position >= t.position - {CONTEXT_TURNS} AND x.position < t.position ORDER BY x.position) x"
    )
    any_positions = (
        f"SELECT '[' || string_agg({piece}, ',' ORDER BY x.position) || ']'"
        " FROM (SELECT x.position, x.role, x.text FROM reviewapp_turn x WHERE x.conversation_id = g.conversation_id"
        " AND (t.position IS NULL OR x.position < t.position)"
        f" ORDER BY x.position DESC LIMIT CASE WHEN t.position IS NULL THEN NULL ELSE {CONTEXT_TURNS} END) x"
    )
    return f"COALESCE(({by_position}), ({any_positions}), '[]')"


CONTEXT_SQL = _context(_PIECE)

GOLD_JOINS = (
    " JOIN reviewapp_conversation c ON c.id = g.conversation_id JOIN reviewapp_dataset d ON d.id = c.dataset_id"
    " LEFT JOIN reviewapp_turn t ON t.id = g.turn_id"
)


def sqlite_statement(judge_id: int, gold: tuple[str, tuple]) -> tuple[str, tuple]:
    """The rows on SQLite and their parameters; `gold` is the ranked gold labels' SQL and parameters."""
    gold_sql, gold_params = gold
    sql, obj = Sqlite, _objects(Sqlite)
    target = f"i.judge_id = {judge_id} AND i.conversation_id = g.conversation_id AND i.turn_id IS g.turn_id"
    items = "JOIN reviewapp_reviewitem i ON i.id"
    reviews = sql.array(obj["review"], f"FROM reviewapp_review r {items} = r.item_id WHERE {target}", "r.id")
    adjudication = (  # the last decision of the target's item, as the object rows keep it
        f"(SELECT {obj['adjudication']} FROM reviewapp_adjudication a {items} = a.item_id"
        f" WHERE {target} ORDER BY a.id DESC LIMIT 1)"
    )
    comments = sql.array(
        obj["comment"],
        "FROM reviewapp_comment m JOIN reviewapp_turn mt ON mt.id = m.turn_id WHERE mt.conversation_id = g.conversation_id"
        f" AND (g.turn_id IS NULL OR m.turn_id = g.turn_id) AND (m.judge_id = {judge_id} OR m.judge_id IS NULL)",
        "m.created_at, m.id",
    )
    nested = f"{reviews}, {adjudication}, {comments}"
    statement = (
        _select(sql, nested)
        + f" FROM ({gold_sql}) g"
        + GOLD_JOINS
        + " WHERE g.source_rank = 1 ORDER BY g.conversation_id, g.turn_id"
    )
    return statement, gold_params


def postgres_statement(judge_id: int, gold: tuple[str, tuple]) -> tuple[str, tuple]:
    """The rows on PostgreSQL and their parameters, `gold` being the SQL and parameters of each
    target's winning gold label (DISTINCT ON, by conversation and turn). One statement gives each row
    everything it writes, its context and verdicts too, so it can be streamed (`export_flat`) while
    the database is still producing the rest.

    `g` comes in the export's order off an index (only each target's own labels are sorted);
    everything else is a lookup by index on the row's conversation, turn or review item, evaluated
    row by row above it, so rows leave the database in order as each is built: no sort of wide rows,
    no aggregate over the whole export first. The reviews and the adjudication are read only when
    the target has a review item, the comments only when it has some (a CASE evaluates its subquery
    only when that branch is taken). A target is its turn id, or 0 for the conversation."""
    gold_sql, gold_params = gold
    obj = _objects(Postgres)
    # Most targets have no comment: an index probe tells, and spares them the aggregate. (Not an
    # uncorrelated IN: once its set outgrows work_mem it is no longer hashed but scanned for every row.)
    has_comments = "g.turn_id IS NULL OR EXISTS (SELECT 1 FROM reviewapp_comment e WHERE e.turn_id = g.turn_id)"
    item = (  # the target's review item (one at most: unique per judge and target)
        f"SELECT i.id FROM reviewapp_reviewitem i WHERE i.judge_id = {judge_id} AND i.conversation_id = g.conversation_id"
        " AND COALESCE(i.turn_id, 0) = COALESCE(g.turn_id, 0) LIMIT 1"
    )
    reviews = f"SELECT json_agg({obj['review']} ORDER BY r.id)::text FROM reviewapp_review r WHERE r.item_id = it.id"
    adjudication = (  # the item's last decision
        f"SELECT {obj['adjudication']}::text FROM reviewapp_adjudication a WHERE a.item_id = it.id ORDER BY a.id DESC LIMIT 1"
    )
    comments = (  # a turn's own comments, or those on every turn of the conversation
        f"SELECT json_agg({obj['comment']} ORDER BY m.created_at, m.id)::text FROM ("
        " SELECT * FROM reviewapp_comment m WHERE m.turn_id = g.turn_id UNION ALL SELECT m.* FROM reviewapp_comment m"
        " JOIN reviewapp_turn ct ON ct.id = m.turn_id WHERE g.turn_id IS NULL AND ct.conversation_id = g.conversation_id"
        f") m JOIN reviewapp_turn mt ON mt.id = m.turn_id WHERE m.judge_id = {judge_id} OR m.judge_id IS NULL"
    )
    verdicts = (  # [version, verdict] pairs by version (in the order versions were made), sweep and run
        "SELECT json_agg(json_build_array(jv.version, json_build_object('sweep', v.sweep_id, 'run', v.run_index,"
        " 'tier', v.tier, 'status', v.status, 'rating', v.rating, 'label', v.label, 'passed', v.passed, 'flags', v.flags,"
        " 'explanation', v.explanation)) ORDER BY v.judge_version_id, v.sweep_id, v.run_index, v.id)::text"
        " FROM reviewapp_verdict v JOIN reviewapp_judgeversion jv ON jv.id = v.judge_version_id"
        f" WHERE jv.judge_id = {judge_id} AND v.conversation_id = g.conversation_id"
        " AND COALESCE(v.turn_id, 0) = COALESCE(g.turn_id, 0)"
    )
    nested = (
        f"CASE WHEN it.id IS NULL THEN '[]' ELSE COALESCE(({reviews}), '[]') END,"
        f" CASE WHEN it.id IS NULL THEN NULL ELSE ({adjudication}) END,"
        f" CASE WHEN {has_comments} THEN COALESCE(({comments}), '[]') ELSE '[]' END"
    )
    statement = (
        f"WITH g AS NOT MATERIALIZED ({gold_sql}) "
        + _select(Postgres, nested)
        + f", {CONTEXT_SQL}, ({verdicts}) FROM g"
        " JOIN reviewapp_conversation c ON c.id = g.conversation_id JOIN reviewapp_dataset d ON d.id = c.dataset_id"
        # LIMIT 1 keeps the turn a lookup by id: joined, the planner would hash every turn of the table
        " LEFT JOIN LATERAL (SELECT * FROM reviewapp_turn t WHERE t.id = g.turn_id LIMIT 1) t ON TRUE"
        f" LEFT JOIN LATERAL ({item}) it ON TRUE"
        " ORDER BY g.block, g.conversation_id, g.turn_id"
    )
    return statement, gold_params


# --- PostgreSQL: each row as the JSONL line it writes --------------------------------------------------
#
# The line is built as text in the order and spelling orjson gives the flat row (no spaces, keys in
# COLUMNS order, text escaped by to_json as orjson escapes it), so the file is the same byte for byte.
# What the database cannot write as Python does goes out as a marker, a quote and then the control
# character \x01 (MARK), its kind and its text, up to a closing quote, that `export_flat` replaces. JSON
# text never holds a control character as it is (to_json and orjson escape it, as \u0001), so nothing
# else in a line or a JSON column looks like one, and a single-byte search (memchr) finds every marker:
# a search for a longer text took 0.5-0.6 ms a megabyte of lines, the byte 0.02. The markers stand
# for a reviewer's pseudonym (an HMAC keyed by the server's secret, which stays in Python), a rating
# outside the range where PostgreSQL and orjson spell floats alike (NaN and the infinities among them,
# which the export writes as null and counts), and stored JSON that is not a list of strings (given as
# hex, re-encoded by orjson).

MARK = "\x01"
# The SQL of a marker's start, a quote and MARK, as an escape string: the statement's text stays ASCII.
_MARK_OPEN = "E'\"\\001"


def _value(column: str) -> str:
    """A column as its JSON value."""
    return f"COALESCE(to_json({column})::text, 'null')"


# A choice that JSON writes as it is between quotes (no character to escape).
_PLAIN_CHOICE = re.compile(r"[A-Za-z0-9_-]+")


def _choices(model, name: str) -> list[str]:
    """The values of a model field's choices that JSON writes as they are, quoted."""
    return [value for value, _ in model._meta.get_field(name).choices if _PLAIN_CHOICE.fullmatch(value)]


def _choice(column: str, model, name: str, *, before: str = "", after: str = "", value=None) -> str:
    """A text column of a field with choices (`model`'s `name`) as its JSON value between the
    constant JSON texts `before` and `after`: each known choice is one constant (no escaping, no
    concatenation); any other value (the database does not hold the column to its choices) as
    `value` writes it (`_value` by default)."""
    known = " ".join(f"WHEN '{choice}' THEN '{before}\"{choice}\"{after}'" for choice in _choices(model, name))
    parts = (f"'{before}'" if before else "", (value or _value)(column), f"'{after}'" if after else "")
    return f"CASE {column} {known} ELSE {' || '.join(part for part in parts if part)} END"


def _plain(column: str) -> str:
    """A number or boolean column as JSON: its text is already JSON's."""
    return f"COALESCE({column}::text, 'null')"


def _rating(column: str) -> str:
    """A float as orjson writes it: PostgreSQL's shortest round-trip digits are orjson's in fixed
    notation (1e-4 <= |x| < 1e15), with ".0" after whole numbers; anything else is marked."""
    return (
        f"CASE WHEN {column} IS NULL THEN 'null' WHEN {column} = 0 OR abs({column}) >= 1e-4 AND abs({column}) < 1e15"
        f" THEN CASE WHEN {column} = trunc({column}) THEN {column}::text || '.0' ELSE {column}::text END"
        f""" ELSE {_MARK_OPEN}f' || {column}::text || '"' END"""
    )


def _person(column: str) -> str:
    return f"""CASE WHEN {column} IS NULL THEN 'null' ELSE {_MARK_OPEN}p' || {column} || '"' END"""


def _stored_json(column: str, kind: str) -> str:
    """Stored JSON (jsonb) compact: an empty or string-only list here, anything else marked (`kind`:
    m for failure modes, which Python reads as a list, j for JSON kept as it is)."""
    return (
        f"CASE WHEN {column} = '[]'::jsonb THEN '[]' WHEN jsonb_typeof({column}) = 'array' AND NOT EXISTS"
        f" (SELECT 1 FROM jsonb_array_elements({column}) e WHERE jsonb_typeof(e) <> 'string')"
        f" THEN '[' || (SELECT string_agg(to_json(e #>> '{{}}')::text, ',' ORDER BY n)"
        f" FROM jsonb_array_elements({column}) WITH ORDINALITY AS s(e, n)) || ']'"
        f" WHEN {column} IS NULL THEN 'null'"
        f""" ELSE {_MARK_OPEN}{kind}' || encode(convert_to({column}::text, 'UTF8'), 'hex') || '"' END"""
    )


def _object(*pairs: tuple[str, str]) -> str:
    """A JSON object from (key, JSON text) pairs, keys as they are (plain names)."""
    parts = [f"""'{"{" if not i else ","}"{key}":' || {value}""" for i, (key, value) in enumerate(pairs)]
    return " || ".join(parts) + " || '}'"


def _list(piece: str, order: str) -> str:
    """The aggregate of JSON pieces as a JSON list (NULL when there are none)."""
    return f"'[' || string_agg({piece}, ',' ORDER BY {order}) || ']'"


def _slug_list(through, owner: str) -> str:
    field = through._meta.get_field("category")
    owner_column = next(f.column for f in through._meta.concrete_fields if f.is_relation and f is not field)
    return (
        f"COALESCE((SELECT {_list('to_json(cat.slug)::text', Postgres.slug_order)} FROM {through._meta.db_table} rc"
        f" JOIN reviewapp_category cat ON cat.id = rc.{field.column} WHERE rc.{owner_column} = {owner}), '[]')"
    )


def _iso(column: str) -> str:
    return f"""COALESCE('"' || {Postgres.iso(column)} || '"', 'null')"""


# The context piece of the lines: the role and the keys around it are one constant per role.
_LINES_PIECE = (
    """'{"position":' || x.position || """
    + _choice(
        "x.role", Turn, "role", before=',"role":', after=',"text":', value=lambda column: f"to_json({column})::text"
    )
    + " || to_json(x.text)::text || '}'"
)
LINES_CONTEXT_SQL = _context(_LINES_PIECE)


CONVERSATIONS_PER_BLOCK = 16  # conversations whose lines (or CSV rows) go in one COPY message


def postgres_lines_statement(
    judge_id: int,
    gold: tuple[str, tuple],
    slug: str,
    *,
    columns: bool = False,
    rows: tuple[int, int | None] = (0, None),
    kept: bool = False,
    keep: bool = False,
) -> tuple[str, tuple]:
    """Two text columns for COPY, in the order `postgres_statement` gives the rows: the datasheet's
    key of each row (a JSON list: language, dataset, gold source, gold rating as text, passed,
    label, the versions with verdicts, the review and comment counts) and its JSONL line, the rows
    of CONVERSATIONS_PER_BLOCK conversations in one COPY row (keys and lines joined by newlines).
    The same lookups by index per row as `postgres_statement`; the reviews, comments and verdicts
    each give their JSON and what the datasheet counts of them from one lateral subquery.

    With `columns`, the CSV rows instead (for Parquet), those of the same blocks of conversations in
    one COPY row after their count: each the key and then the flat columns (COLUMNS' order), the
    nested ones as the same JSON text, the others as values, a non-finite gold rating as NULL
    (`_csv_row`).

    `rows` (first, count or None for the rest) gives a part of the rows in their order: the gold
    labels are skipped before anything is looked up for them.

    With `kept`, a row whose line (or CSV row) is kept and current (ExportLine, `kept_line`) is read
    from there, and nothing is looked up for it. With `keep`, the statement is instead the INSERT
    that keeps the key, line and CSV row of every row without a current one (`export_lines.refresh`)."""
    if columns and keep:
        raise ValueError("a line is kept with its CSV row: keep takes no columns")
    gold_sql, gold_params = gold
    first, count = rows
    if first or count is not None:
        gold_sql = (
            f"SELECT * FROM ({gold_sql}) g0 ORDER BY g0.block, g0.conversation_id, g0.turn_id"
            f" OFFSET {int(first)}{'' if count is None else f' LIMIT {int(count)}'}"
        )
    review = _object(
        ("reviewer", _person("r.reviewer_id")), ("rating", _rating("r.rating")), ("label", _value("r.label")),
        ("passed", _plain("r.passed")), ("categories", _slug_list(Review.categories.through, "r.id")),
        ("comment", _value("r.comment")), ("quoted_span", _value("r.quoted_span")), ("created_at", _iso("r.created_at")),
    )  # fmt: skip
    adjudication = _object(
        ("lead", _person("a.lead_id")), ("rating", _rating("a.rating")), ("label", _value("a.label")),
        ("passed", _plain("a.passed")), ("categories", _slug_list(Adjudication.categories.through, "a.id")),
        ("rationale", _value("a.rationale")),
    )  # fmt: skip
    comment = _object(
        ("author", _person("m.author_id")), ("turn_position", _plain("mt.position")), ("body", _value("m.body")),
        ("categories", _slug_list(Comment.categories.through, "m.id")), ("quoted_span", _value("m.quoted_span")),
        ("reply_to", _plain("m.parent_id")), ("id", _plain("m.id")), ("created_at", _iso("m.created_at")),
    )  # fmt: skip
    verdict = _object(
        ("sweep", _plain("v.sweep_id")), ("run", _plain("v.run_index")), ("tier", _choice("v.tier", Verdict, "tier")),
        ("status", _choice("v.status", Verdict, "status")), ("rating", _rating("v.rating")), ("label", _value("v.label")),
        ("passed", _plain("v.passed")), ("flags", _stored_json("v.flags", "j")), ("explanation", _value("v.explanation")),
    )  # fmt: skip
    item = (
        f"SELECT i.id FROM reviewapp_reviewitem i WHERE i.judge_id = {judge_id}"
        " AND i.conversation_id = g.conversation_id AND COALESCE(i.turn_id, 0) = COALESCE(g.turn_id, 0) LIMIT 1"
    )
    reviews = f"SELECT {_list(review, 'r.id')} AS json, count(*) AS n FROM reviewapp_review r WHERE r.item_id = it.id"
    adjudication_of_item = (
        f"SELECT {adjudication} FROM reviewapp_adjudication a WHERE a.item_id = it.id ORDER BY a.id DESC LIMIT 1"
    )
    comments = (  # a turn's own comments, or those on every turn of the conversation
        f"SELECT {_list(comment, 'm.created_at, m.id')} AS json, count(*) AS n FROM ("
        " SELECT * FROM reviewapp_comment m WHERE m.turn_id = g.turn_id UNION ALL SELECT m.* FROM reviewapp_comment m"
        " JOIN reviewapp_turn ct ON ct.id = m.turn_id WHERE g.turn_id IS NULL AND ct.conversation_id = g.conversation_id"
        f") m JOIN reviewapp_turn mt ON mt.id = m.turn_id WHERE (m.judge_id = {judge_id} OR m.judge_id IS NULL)"
    )
    # {version: [verdicts by sweep and run]}, versions in the order they were made (by id). The
    # verdicts are sorted once, innermost; the aggregates above take them in that order (as the
    # context's do): an ORDER BY inside each of them would sort three times per row.
    verdicts = (
        "SELECT '{' || string_agg(to_json(x.version)::text || ':[' || x.json || ']', ',') || '}' AS json,"
        " '[' || string_agg(to_json(x.version)::text, ',') || ']' AS versions"
        " FROM (SELECT y.id, min(y.version) AS version, string_agg(y.json, ',') AS json"
        f" FROM (SELECT jv.id, jv.version, {verdict} AS json"
        " FROM reviewapp_verdict v JOIN reviewapp_judgeversion jv ON jv.id = v.judge_version_id"
        f" WHERE jv.judge_id = {judge_id} AND v.conversation_id = g.conversation_id"
        " AND COALESCE(v.turn_id, 0) = COALESCE(g.turn_id, 0) ORDER BY jv.id, v.sweep_id, v.run_index, v.id) y"
        " GROUP BY y.id ORDER BY y.id) x"
    )
    # A keep writes each row twice, as its line and as its CSV row: the context and the adjudication,
    # each a subquery, are built once in a lateral of their own that both read (written into each,
    # the database would run each subquery twice: the INSERT of 100,000 rows on one connection took
    # 4.6 s instead of 4.1).
    # An export writes one or the other, where the lateral would only add a node per row.
    if keep:
        context, adjudication = "cx.json", "ad.json"
    else:
        context, adjudication = LINES_CONTEXT_SQL, f"CASE WHEN it.id IS NOT NULL THEN ({adjudication_of_item}) END"
    line = _object(
        ("dataset", _value("d.name")), ("conversation_id", _value("c.external_id")), ("language", _value("c.language")),
        ("judge", "%s::text"),  # the slug as JSON, written by orjson once (to_json would run per row)
        ("level", """CASE WHEN t.position IS NULL THEN '"conversation"' ELSE '"turn"' END"""),
        ("turn_position", _plain("t.position")), ("turn_role", _choice("t.role", Turn, "role")), ("text", _value("t.text")),
        ("intended_text", _value("NULLIF(t.intended_text, '')")), ("context", context),
        ("gold_rating", _rating("g.rating")), ("gold_label", _value("NULLIF(g.label, '')")),
        ("gold_passed", _plain("g.passed")), ("gold_failure_modes", _stored_json("g.failure_modes", "m")),
        ("gold_source", _choice("g.source", GoldLabel, "source")), ("gold_labelled_at", _iso("g.created_at")),
        ("adjudication", f"COALESCE({adjudication}, 'null')"),
        ("reviews", "COALESCE(rv.json, '[]')"), ("comments", "COALESCE(cm.json, '[]')"),
        ("verdicts", "COALESCE(vd.json, '{}')"),
    )  # fmt: skip
    flat = (
        "d.name", "c.external_id", "c.language", "%s::text",
        "CASE WHEN t.position IS NULL THEN 'conversation' ELSE 'turn' END", "t.position", "t.role", "t.text",
        "NULLIF(t.intended_text, '')", context,
        "CASE WHEN g.rating = ANY ('{NaN,Infinity,-Infinity}'::float8[]) THEN NULL ELSE g.rating END",
        "NULLIF(g.label, '')", _copy_bool("g.passed"), _stored_json("g.failure_modes", "m"), "g.source",
        Postgres.iso("g.created_at"), adjudication,
        "COALESCE(rv.json, '[]')", "COALESCE(cm.json, '[]')", "COALESCE(vd.json, '{}')",
    )  # fmt: skip
    key = (
        f"'[' || {_value('c.language')} || ',' || {_value('d.name')} || ',' || {_choice('g.source', GoldLabel, 'source')}"
        f""" || ',' || COALESCE('"' || g.rating::text || '"', 'null') || ',' || {_plain("g.passed")}"""
        f" || ',' || {_value('g.label')} || ',' || COALESCE(vd.versions, '[]') || ',' || rv.n || ',' || cm.n || ']'"
    )
    conversation = "reviewapp_conversation c JOIN reviewapp_dataset d ON d.id = c.dataset_id"
    lookups = (
        " LEFT JOIN LATERAL (SELECT * FROM reviewapp_turn t WHERE t.id = g.turn_id LIMIT 1) t ON TRUE"
        # OFFSET 0: a subquery without FROM would be pulled up, its expression copied to each use
        + (f" CROSS JOIN LATERAL (SELECT {LINES_CONTEXT_SQL} AS json OFFSET 0) cx" if keep else "")
        + f" LEFT JOIN LATERAL ({item}) it ON TRUE"
        + (f" LEFT JOIN LATERAL ({adjudication_of_item}) ad(json) ON TRUE" if keep else "")
        + f" CROSS JOIN LATERAL ({reviews}) rv CROSS JOIN LATERAL ({comments}) cm LEFT JOIN LATERAL ({verdicts}) vd ON TRUE"
    )
    row = _csv_row((key, *flat))
    if kept or keep:
        # A row's kept line (`kl`), else what is built for it (`bl`): every lookup sits in one subquery
        # whose only condition is on the outer row, so the plan tests it once per row and skips them all.
        built = (
            f"{key} AS key, {line} AS line, {row} AS row"
            if keep
            else (f"{row} AS row" if columns else f"{key} AS key, {line} AS line")
        )
        joins = (
            f" FROM g LEFT JOIN LATERAL ({kept_line()}) kl ON TRUE LEFT JOIN LATERAL (SELECT {built}"
            f" FROM {conversation}{lookups} WHERE kl.line IS NULL AND c.id = g.conversation_id OFFSET 0) bl ON TRUE"
        )
        key, line, row = "COALESCE(kl.key, bl.key)", "COALESCE(kl.line, bl.line)", "COALESCE(kl.columns, bl.row)"
    else:
        joins = f" FROM g JOIN ({conversation}) ON c.id = g.conversation_id{lookups}"
    if keep:
        statement = (
            f"WITH g AS NOT MATERIALIZED ({gold_sql}) INSERT INTO reviewapp_exportline"
            " (gold_id, judge_id, conversation_id, fingerprint, migration, epoch, generation, key, line, columns)"
            f" SELECT g.id, {judge_id}, g.conversation_id, '{fingerprint()}', ({MIGRATION}), ({EPOCH}),"
            f" eg.generation, bl.key, bl.line, bl.row{joins}"
            " JOIN reviewapp_exportgeneration eg ON eg.conversation_id = g.conversation_id WHERE kl.line IS NULL"
            " ON CONFLICT (gold_id) DO UPDATE SET judge_id = EXCLUDED.judge_id, conversation_id = EXCLUDED.conversation_id,"
            " fingerprint = EXCLUDED.fingerprint, migration = EXCLUDED.migration, epoch = EXCLUDED.epoch,"
            " generation = EXCLUDED.generation, key = EXCLUDED.key, line = EXCLUDED.line, columns = EXCLUDED.columns"
        )
        return statement, (*gold_params, orjson.dumps(slug).decode(), slug)
    # The rows of CONVERSATIONS_PER_BLOCK conversations (by id) at a time, one COPY row (a message)
    # each: the gold labels come by block first (the same order, `export_flat._gold_sql`), the
    # lookups run row by row above them, and each block's aggregates take its rows in that order. A
    # line or key holds no newline (JSON escapes it), so the keys are split where the lines are; a CSV
    # row may hold one (in quotes), so the CSV rows come after their count.
    blocks = f"WITH g AS NOT MATERIALIZED (SELECT g1.* FROM ({gold_sql}) g1 ORDER BY g1.block, g1.conversation_id, g1.turn_id)"
    if columns:
        statement = (
            f"{blocks} SELECT count(*)::text, string_agg(b.row || E'\\n', '')"
            f" FROM (SELECT g.block, {row} AS row{joins}"
            " ORDER BY g.block, g.conversation_id, g.turn_id) b GROUP BY b.block ORDER BY b.block"
        )
        return statement, (*gold_params, slug)
    statement = (
        f"{blocks} SELECT string_agg(b.key, E'\\n'), string_agg(b.line, E'\\n')"
        f" FROM (SELECT g.block, {key} AS key, {line} AS line{joins}"
        " ORDER BY g.block, g.conversation_id, g.turn_id) b GROUP BY b.block ORDER BY b.block"
    )
    return statement, (*gold_params, orjson.dumps(slug).decode())


def _copy_bool(column: str) -> str:
    """A boolean as COPY writes it (t or f): its cast to text is "true" or "false"."""
    return f"CASE WHEN {column} THEN 't' WHEN NOT {column} THEN 'f' END"


def _csv_row(values: tuple[str, ...]) -> str:
    """One CSV row of the values, as `export_flat.CsvTables` reads it: NULL as an empty field, any
    other value quoted (its text as COPY writes it, each `"` doubled), the fields joined by commas."""
    return " || ',' || ".join(
        f"""COALESCE('"' || replace(({value})::text, '"', '""') || '"', '')""" for value in values
    )


# --- kept lines (ExportLine) ------------------------------------------------------------------------

MIGRATION = "SELECT max(id) FROM django_migrations"  # the schema a line was built on
EPOCH = "SELECT epoch FROM reviewapp_exportepoch WHERE id = 1"


def kept_line() -> str:
    """The kept key and line of gold label `g`, when current: built by this code (its fingerprint),
    on this schema, in this epoch and in its conversation's current generation. Each of the three
    counters moves forward in the transaction of any change a line draws on (migration 0018's
    triggers), so what one snapshot sees as current was built from the data that snapshot sees. The
    migration and the epoch are read once per statement."""
    # LIMIT keeps it a lookup by the row's gold id, not a join of all lines
    return f"SELECT x.key, x.line, x.columns {_current_lines('x.gold_id = g.id')} LIMIT 1"


def _current_lines(where: str) -> str:
    """FROM and WHERE of the kept lines `x` that match `where` and are current (`kept_line`)."""
    return (
        "FROM reviewapp_exportline x JOIN reviewapp_exportgeneration eg"
        " ON eg.conversation_id = x.conversation_id AND eg.generation = x.generation"
        f" WHERE {where} AND x.fingerprint = '{fingerprint()}' AND x.migration = ({MIGRATION})"
        f" AND x.epoch = ({EPOCH})"
    )


# --- kept blocks (ExportBlock) ------------------------------------------------------------------------
#
# The kept lines of one block of conversations (`block` = conversation id // CONVERSATIONS_PER_BLOCK),
# joined as the JSONL statement's COPY row joins them, and their CSV rows as the Parquet one's does. A block is current while it is what its lines
# would give: the same winning gold labels in the same order (`golds`: their ids, in the order
# `_BLOCK_GOLDS` joins them, which is the export's), every conversation with an id in the block at the
# generation it was composed at (one range read of ExportGeneration's primary key), the same code,
# schema and epoch. Each of those moves in the transaction of any change a line draws on, as for
# `kept_line`; a filter that leaves a block's gold labels out changes `golds`, so the block is
# simply not used.

# The export's gold labels `g` with their block, in the export's order; then each block's gold ids.
_BLOCK_G = "WITH g AS NOT MATERIALIZED (SELECT g1.id, g1.block FROM ({gold}) g1 ORDER BY g1.block, g1.conversation_id, g1.turn_id)"
_BLOCK_GOLDS = "(SELECT g.block, string_agg(g.id::text, ',') AS golds FROM g GROUP BY g.block)"


# A block's kept rows (`kl`, in the export's order) joined as the export reads them: the keys and
# the lines each between newlines, the CSV rows each ending in one (a CSV row may hold a newline).
_BLOCK_COMPOSED = (
    "count(*) AS n, count(kl.line) AS kept, string_agg(kl.key, E'\\n') AS keys, string_agg(kl.line, E'\\n') AS lines,"
    " string_agg(kl.columns || E'\\n', '') AS columns"
)


def _block_generations(block: str) -> str:
    """The ids and generations of the conversations in `block` as text (at most its 16 ids, by the
    primary key: the LIMIT keeps it an index scan, not a bitmap of the range)."""
    per = CONVERSATIONS_PER_BLOCK
    return (
        "(SELECT string_agg(e.conversation_id || ':' || e.generation, ',') FROM (SELECT eg.conversation_id, eg.generation"
        f" FROM reviewapp_exportgeneration eg WHERE eg.conversation_id >= {block} * {per}"
        f" AND eg.conversation_id < ({block} + 1) * {per} ORDER BY eg.conversation_id LIMIT {per}) e)"
    )


def postgres_winning_gold(labels_sql: str, columns: tuple[str, ...]) -> str:
    """The winner of each target among the gold labels of `labels_sql` (their `columns`, and
    `gold_rank`: their source's rank), with its `block`, by block, conversation and turn
    (`export_flat._gold_sql`). The inner ORDER BY is the index `gold_judge_block`'s order, then the
    rank and id: a walk of the index with an incremental sort of each target's labels, whose order
    the DISTINCT ON above it takes as it is (a DISTINCT ON of its own sorts its whole input on
    PostgreSQL 15)."""
    per = CONVERSATIONS_PER_BLOCK
    names = ", ".join(f"w.{name}" for name in (*columns, "block"))
    return (
        f"SELECT DISTINCT ON (w.block, w.conversation_id, w.turn_id) {names} FROM"
        f" (SELECT w0.*, w0.conversation_id / {per} AS block FROM ({labels_sql}) w0"
        f" ORDER BY w0.conversation_id / {per}, w0.conversation_id, w0.turn_id, w0.gold_rank, w0.id) w"
        " ORDER BY w.block, w.conversation_id, w.turn_id, w.gold_rank, w.id"
    )


def _block_gold(gold_sql: str) -> str:
    """The gold labels of `gold_sql` in block `gb.block` alone (the block and its range of
    conversations are pushed into the gold labels' scan: a lookup of the block in `gold_judge_block`
    or by conversation, not a walk of them all)."""
    per = CONVERSATIONS_PER_BLOCK
    return (
        f"SELECT * FROM ({gold_sql}) g0 WHERE g0.block = gb.block AND g0.conversation_id >= gb.block * {per}"
        f" AND g0.conversation_id < (gb.block + 1) * {per}"
    )


def _current_block(judge_id: int) -> str:
    """FROM and WHERE of judge `judge_id`'s kept block `x` of `gb` (its block and gold ids), when current."""
    return (
        f"FROM reviewapp_exportblock x WHERE x.judge_id = {judge_id} AND x.block = gb.block AND x.golds = gb.golds"
        f" AND x.fingerprint = '{block_fingerprint()}' AND x.migration = ({MIGRATION}) AND x.epoch = ({EPOCH})"
        f" AND x.generations = {_block_generations('gb.block')}"
    )


def postgres_blocks_statement(
    judge_id: int, gold: tuple[str, tuple], slug: str, *, columns: bool = False
) -> tuple[str, tuple]:
    """What `postgres_lines_statement(kept=True)` gives (the keys and lines of each block of
    conversations, one row each, in order; with `columns`, the count and CSV rows of each block),
    read from the kept blocks: a current block is one lookup; any other block's rows are read by
    that statement, for its gold labels alone (kept lines or built), so any mix of kept and stale
    blocks gives the same rows. The gold labels are read once, in order, for the blocks, and once
    more, by block, for each block that is not kept."""
    gold_sql, gold_params = gold
    rows, rows_params = postgres_lines_statement(
        judge_id, (_block_gold(gold_sql), gold_params), slug, kept=True, columns=columns
    )
    kept = "x.rows::text, x.columns" if columns else "x.keys, x.lines"
    statement = (
        _BLOCK_G.format(gold=gold_sql) + " SELECT COALESCE(kb.first, rb.first), COALESCE(kb.second, rb.second)"
        f" FROM {_BLOCK_GOLDS} gb"
        f" LEFT JOIN LATERAL (SELECT TRUE AS found, {kept} {_current_block(judge_id)} LIMIT 1) kb(found, first, second)"
        " ON TRUE"
        # evaluated only for a block with no current kept block: its one condition is on the outer row
        f" LEFT JOIN LATERAL (SELECT * FROM ({rows}) r WHERE kb.found IS NULL OFFSET 0) rb(first, second) ON TRUE"
        " ORDER BY gb.block"
    )
    return statement, (*gold_params, *rows_params)


def postgres_keep_blocks_statement(judge_id: int, gold: tuple[str, tuple]) -> tuple[str, tuple]:
    """The INSERT that keeps the block of every block of `gold` (the judge's gold labels, no
    filters) that has none current and whose rows all have a current kept line (`kept_line`): their
    keys and lines joined in the export's order, and their CSV rows (each ending in a newline) with
    their count, with what says whether the block is current. A block with a row not kept (or gone
    stale since) is left for the next refresh."""
    gold_sql, gold_params = gold
    statement = (
        _BLOCK_G.format(gold=gold_sql) + " INSERT INTO reviewapp_exportblock"
        " (judge_id, block, golds, generations, fingerprint, migration, epoch, keys, lines, rows, columns)"
        f" SELECT {judge_id}, gb.block, gb.golds, {_block_generations('gb.block')}, '{block_fingerprint()}',"
        f" ({MIGRATION}), ({EPOCH}), kb.keys, kb.lines, kb.n, kb.columns FROM {_BLOCK_GOLDS} gb"
        f" CROSS JOIN LATERAL (SELECT {_BLOCK_COMPOSED} FROM (SELECT g.id FROM"
        f" ({_block_gold(gold_sql)}) g ORDER BY g.conversation_id, g.turn_id) g"
        f" LEFT JOIN LATERAL ({kept_line()}) kl ON TRUE"
        f" WHERE NOT EXISTS (SELECT 1 {_current_block(judge_id)}) OFFSET 0) kb"
        " WHERE kb.n > 0 AND kb.kept = kb.n"
        " ON CONFLICT (judge_id, block) DO UPDATE SET golds = EXCLUDED.golds, generations = EXCLUDED.generations,"
        " fingerprint = EXCLUDED.fingerprint, migration = EXCLUDED.migration, epoch = EXCLUDED.epoch,"
        " keys = EXCLUDED.keys, lines = EXCLUDED.lines, rows = EXCLUDED.rows, columns = EXCLUDED.columns"
    )
    return statement, (*gold_params, *gold_params)


@functools.cache
def block_fingerprint() -> str:
    """`fingerprint` with how blocks are composed and tested: a block kept by other code is never
    read as current."""
    layout = (  # how a block is found and tested, and how it is composed (its keys, lines and CSV rows)
        f"{_BLOCK_G}\n{_BLOCK_GOLDS}\n{_block_generations('b')}\n{_block_gold('SELECT 0')}\n{_BLOCK_COMPOSED}"
    )
    return hashlib.sha256(f"{fingerprint()}\n{layout}".encode()).hexdigest()[:16]


def kept_share_statement(labels_sql: str) -> str:
    """How many sampled gold labels (`labels_sql`, one `conversation_id` column) there are, and how
    many of them have a current kept line of the judge (the first parameter, before the labels') in
    their conversation: `kept_line`'s test by conversation, since every line of a conversation goes
    stale with its generation, and a target's label that is not its winner has no line of its own."""
    current = _current_lines("x.judge_id = %s AND x.conversation_id = s.conversation_id")
    return f"SELECT count(*), count(*) FILTER (WHERE EXISTS (SELECT 1 {current})) FROM ({labels_sql}) s"


@functools.cache
def fingerprint() -> str:
    """What the code that builds a line writes, as 16 hex digits: the SQL of the lines and CSV rows
    for a judge and gold labels that stand for any (so lines kept by other code are never read as
    current)."""
    lines, _ = postgres_lines_statement(0, ("SELECT 0", ()), "")
    columns, _ = postgres_lines_statement(0, ("SELECT 0", ()), "", columns=True)
    return hashlib.sha256(f"{lines}\n{columns}".encode()).hexdigest()[:16]
