"""What "start reviewing" reads, as one statement compiled once per shape of request: the item the
reviewer already holds, and the first few claimable items, together. The ORM spent most of a claim's
CPU building these two statements again on every request (the index walks per language, the claim
rules' subqueries), while the SQL runs in about a millisecond.

The conditions are the ORM's own (`claims.claimable_by_q`, `claims.held_by`, the filters, `access`
through `item_language_q`), compiled once per shape (database vendor, how many languages, which
filters are set) with stand-in values that each request's own replace (`queue_sql.StandIns`).
"""

# ruff: noqa: S608 - fixed fragments, column and table names only; values go as query parameters

from __future__ import annotations

from datetime import datetime
from functools import lru_cache

from reviewapp.access import sees_all_languages
from reviewapp.models import ReviewItem
from reviewapp.rows import Columns, Rows, prepared_cursor
from reviewapp.triage.selectors.claims import (
    _languages_for,
    _statuses_for,
    candidates_of,
    claimable_by_q,
    held_by,
    walked,
)
from reviewapp.triage.selectors.queue_filters import ACTIVE, QueueFilters, languages_q
from reviewapp.triage.selectors.queue_sql import Shape, Statement, compiled


@lru_cache(maxsize=256)
def _next_statement(shape: Shape, limit: int) -> Statement:
    """(0, id) for the item the user holds, if any, then (1, id) for each of the first `limit` claimable
    items matching the filters (`claims.held_item`, `claims.claim_candidate_ids`) for one shape."""
    stand_ins, languages, walked_languages, filters = shape.stand_ins()
    user_id, now = stand_ins.integer("user"), stand_ins.moment("now")
    in_languages = languages_q(sees_all=shape.sees_all, languages=languages)
    held_sql, held_params = compiled(
        held_by(user_id=user_id, now=now, in_languages=in_languages).values_list("pk", flat=True)[:1]
    )
    sql, params = f"SELECT 0, h.* FROM ({held_sql}) h", list(held_params)
    statuses = [code for code in _statuses_for(filters) if code in ACTIVE]
    if walked_languages and statuses:
        candidates = candidates_of(claimable_by_q(user_id=user_id, now=now, in_languages=in_languages), filters)
        top = walked(candidates, statuses=statuses, languages=walked_languages, limit=limit)
        top_sql, top_params = compiled(top.values_list("pk", flat=True))
        sql += f" UNION ALL SELECT 1, c.* FROM ({top_sql}) c"
        params += top_params
    return stand_ins.statement(sql, params)


def held_and_candidates(
    *, user, filters: QueueFilters | None, now: datetime, languages: list[str], limit: int
) -> tuple[int | None, list[int]]:
    """The id of the item `user` holds (None when none) and the ids of the first `limit` items they may
    claim (in no particular order), in one statement."""
    rows = _rows_of(_next_statement, user=user, filters=filters, now=now, languages=languages, limit=limit)
    held = next((item_id for kind, item_id in rows if kind == 0), None)
    return held, [item_id for kind, item_id in rows if kind == 1]


def held_and_candidate_rows(
    *, user, filters: QueueFilters | None, now: datetime, languages: list[str], limit: int
) -> tuple[ReviewItem | None, list[ReviewItem]]:
    """`held_and_candidates` with the items themselves, whole, in claim order: for a claim that reads
    and writes under one write lock (SQLite), where what is read is what the write finds."""
    rows = _rows_of(_rows_statement, user=user, filters=filters, now=now, languages=languages, limit=limit)
    held, candidates = None, []
    for kind, *columns in rows:
        (item,) = _ITEM.instances(columns)
        if kind == 0:  # at most one: the held statement is LIMIT 1
            held = item
        else:
            candidates.append(item)
    return held, candidates


def _rows_of(
    statement_of, *, user, filters: QueueFilters | None, now: datetime, languages: list[str], limit: int
) -> list[tuple]:
    """The rows of `statement_of(shape, limit)` for this request."""
    sees_all = sees_all_languages(user)
    if not sees_all and not languages:
        return []  # no language of theirs: nothing held, nothing to claim (`language IN ()`)
    filters = filters or QueueFilters()
    walked_languages = _languages_for(filters, languages)
    shape = Shape.of(sees_all=sees_all, languages=languages, walked=walked_languages, filters=filters)
    statement = statement_of(shape, limit)
    values = Shape.values(languages, filters) | {"user": user.pk, "now": now}
    with prepared_cursor() as cursor:
        cursor.execute(statement.sql, statement.bind(values))
        return cursor.fetchall()


_ITEM = Rows(Columns(ReviewItem, "ri"))


@lru_cache(maxsize=256)
def _rows_statement(shape: Shape, limit: int) -> Statement:
    """`_next_statement` with each item's whole row: (0, item) for the one the user holds, then (1, item)
    for each of the first `limit` claimable ones, in claim order."""
    statement = _next_statement(shape, limit)
    (item,) = _ITEM.parts
    # The empty first SELECT names the columns (SQLite takes no column list on a derived table).
    sql = (
        f"SELECT x.kind, {_ITEM.select()} FROM (SELECT 0 AS kind, 0 AS id WHERE 1 = 0 UNION ALL {statement.sql}) x"
        f" INNER JOIN {item.table()} ON ri.id = x.id ORDER BY x.kind, ri.priority DESC, ri.id"
    )
    return Statement(sql, statement.params)
