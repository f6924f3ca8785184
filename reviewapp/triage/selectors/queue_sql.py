"""The queue page's reads as statements compiled once and bound on every request: the ORM spent most of
the page's selector time building the same few statements again (the walks of the queue indexes, the
per-item annotations, the reviewer's own numbers), while the SQL itself runs in a millisecond or two.

The conditions still come from the ORM's own expressions (the filters, the keyset, `access` through
`item_language_q`, the claim rules of `own_progress`): each is compiled once per shape of the request
(database vendor, how many languages, which filters are set) with stand-in values, which are then
swapped for the request's own (`StandIns`). The rows become the same model instances as from a
queryset (`reviewapp.rows`). Values always go as query parameters.
"""

# ruff: noqa: S608 - fixed fragments, column and table names only; values go as query parameters

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models import QuerySet

from reviewapp.access import sees_all_languages
from reviewapp.models import Conversation, Dataset, Judge, QueueCount, Review, ReviewItem, Turn
from reviewapp.rows import Columns, Rows, cache_related, prepared_cursor, run_sql
from reviewapp.triage.selectors.claims import _languages_for, _statuses_for, walk_parts
from reviewapp.triage.selectors.queue_filters import QueueFilters

User = get_user_model()


class StandIns:
    """Distinct values a statement is compiled with in place of a request's own. The compiled parameters
    then form a template (`Statement`) in which each stand-in is replaced by the value it stands for.

    A stand-in is a valid value of its field (an integer in range, a string, an aware datetime), so the
    ORM compiles it like any value; it is recognised afterwards in the parameters as the ORM adapted it."""

    def __init__(self) -> None:
        self.names: dict[Any, tuple[str, str]] = {}  # the stand-in as compiled -> (its name, its kind)
        self._count = 0

    def _next(self) -> int:
        self._count += 1
        return self._count

    def integer(self, name: str) -> int:
        value = 2_147_000_000 + self._next()
        self.names[value] = (name, "integer")
        return value

    def text(self, name: str) -> str:
        value = f"\x1fstand-in {name} {self._next()}\x1f"
        self.names[value] = (name, "text")
        return value

    def moment(self, name: str) -> datetime:
        n = self._next()
        value = datetime(1901, 2, 3, tzinfo=UTC) + timedelta(seconds=n, microseconds=n)
        self.names[connection.ops.adapt_datetimefield_value(value)] = (name, "moment")
        return value

    def filters(self, *, language: str, reason: str, status: str, judge: bool, dataset: bool) -> QueueFilters:
        """The queue filters of one shape of request: the choices (language, reason, status) as they are,
        since they are part of the shape; a judge and a dataset as stand-ins when set."""
        return QueueFilters(
            language=language,
            judge=self.text("judge") if judge else "",
            reason=reason,
            dataset=self.integer("dataset") if dataset else None,
            status=status,
        )

    def statement(self, sql: str, params: Sequence[Any]) -> Statement:
        template = []
        for param in params:
            try:
                named = self.names.get(param)
            except TypeError:  # an unhashable constant
                named = None
            template.append(named if named and type(param) is not bool else (None, param))
        # A stand-in may go unused (a condition that matches nothing compiles to none), but one written
        # into the SQL itself, not passed as a parameter, would stay in every request's statement.
        inlined = [name for value, (name, _) in self.names.items() if str(value)[:10] in sql]
        if inlined:
            raise ValueError(f"stand-ins compiled into the SQL instead of its parameters: {sorted(inlined)}")
        sql, template = _choices_written(sql, template)
        return Statement(sql, tuple(template))


# A constant that is a code of the schema's own (a status, a reason): letters, digits, _ and -.
_CODE = re.compile(r"[A-Za-z0-9_-]{1,64}")
# A code quoted as a JSON string and asked as LIKE's pattern (a reason on SQLite: `icontains`, with `_`
# escaped as it is LIKE's wildcard).
_LIKE_CODE = re.compile(r'%"(?:[A-Za-z0-9-]|\\_){1,64}"%')
_PLACEHOLDER = re.compile(r"%%|%s")


def _literal(value: Any) -> str | None:
    """The SQL literal of a constant parameter that is a flag (a boolean), a code (a string of `_CODE`), a code's LIKE
    pattern (`_LIKE_CODE`), or on PostgreSQL a JSON list of codes (a reason asked by containment); None
    for any other value. A literal's % signs are doubled, as in the statement's own text (the drivers
    read `%%` as one % when they bind the parameters)."""
    if isinstance(value, bool):  # a flag's condition (`revision_requested = true`), as a partial index has it
        return ("true" if value else "false") if connection.vendor == "postgresql" else str(int(value))
    if isinstance(value, str):
        if _CODE.fullmatch(value):
            return f"'{value}'"
        if _LIKE_CODE.fullmatch(value):
            return "'" + value.replace("%", "%%") + "'"
        return None
    if connection.vendor != "postgresql":
        return None
    from psycopg.types.json import Jsonb  # PostgreSQL's driver

    if isinstance(value, Jsonb):
        codes = value.obj
        if isinstance(codes, list) and codes and all(isinstance(c, str) and _CODE.fullmatch(c) for c in codes):
            return "'[" + ",".join(f'"{c}"' for c in codes) + "]'::jsonb"
    return None


def _choices_written(sql: str, template: list) -> tuple[str, list]:
    """`sql` and its parameter template with the constant codes (statuses, reasons) written into the SQL.

    SQLite uses a partial index (`item_active_queue` over the active statuses, a reason's
    `item_queue_<reason>`) only when the statement names the index's condition word for word, with the
    values written in, never as parameters. PostgreSQL keeps these statements prepared (`rows.prepared_cursor`) and, after a few executions,
    runs one generic plan for every request instead of planning each one, which costs more than the
    queue's walks themselves (1.5 ms of planning for a 1.3 ms page of items). A generic plan cannot
    use a partial index whose predicate names a value that is a parameter (`status IN ('open',
    'in_review')`, `reasons @> '["gold_disagrees"]'`): with those values as parameters every request
    was planned afresh. The codes are fixed by the statement's shape, never a request's value, and are
    written only when they are made of `_CODE`'s characters (nothing to quote); anything else stays a
    parameter, as does the whole statement when its placeholders cannot be told apart."""
    pieces = _PLACEHOLDER.split(sql)
    markers = _PLACEHOLDER.findall(sql)
    if sum(marker == "%s" for marker in markers) != len(template):
        return sql, template
    written, kept, params = [pieces[0]], [], iter(template)
    for marker, after in zip(markers, pieces[1:], strict=True):
        if marker == "%%":
            written.append(marker)
        else:
            name, value = next(params)
            literal = _literal(value) if name is None else None
            if literal is None:
                written.append(marker)
                kept.append((name, value))
            else:
                written.append(literal)
        written.append(after)
    return "".join(written), kept


@dataclasses.dataclass(frozen=True)
class Statement:
    """SQL with a template of parameters: constants, and the names of the values each request gives."""

    sql: str
    params: tuple[tuple[str | None, Any], ...]

    def bind(self, values: dict[str, Any]) -> list[Any]:
        bound = []
        for name, kind in self.params:
            if name is None:
                bound.append(kind)
            elif kind == "moment":
                bound.append(connection.ops.adapt_datetimefield_value(values[name]))
            else:
                bound.append(values[name])
        return bound


def compiled(queryset: QuerySet) -> tuple[str, tuple]:
    return queryset.query.sql_with_params()


@dataclasses.dataclass(frozen=True)
class Shape:
    """What a compiled queue or claim statement depends on, and so the key it is kept under: the
    database, whether the user sees every language, how many languages they have and which of them
    are walked, and the filters' choices (a judge and a dataset only as set or not: their values, like
    the languages, are bound by each request through `values`)."""

    vendor: str
    sees_all: bool
    language_count: int
    walked_languages: tuple[int, ...]
    status: str
    language: str
    reason: str
    judge: bool
    dataset: bool

    @classmethod
    def of(cls, *, sees_all: bool, languages: list[str], walked: Sequence[str], filters: QueueFilters) -> Shape:
        return cls(
            connection.vendor,
            sees_all,
            len(languages),
            tuple(languages.index(code) for code in walked),
            filters.status,
            filters.language,
            filters.reason,
            bool(filters.judge),
            bool(filters.dataset),
        )

    def stand_ins(self) -> tuple[StandIns, list[str], list[str], QueueFilters]:
        """Stand-ins for this shape's values: the user's languages, those walked, and the filters."""
        stand_ins = StandIns()
        languages = [stand_ins.text(f"language {n}") for n in range(self.language_count)]
        filters = stand_ins.filters(
            language=self.language, reason=self.reason, status=self.status, judge=self.judge, dataset=self.dataset
        )
        return stand_ins, languages, [languages[n] for n in self.walked_languages], filters

    @staticmethod
    def values(languages: list[str], filters: QueueFilters) -> dict[str, Any]:
        """The values a request binds for the stand-ins of `stand_ins`."""
        values: dict[str, Any] = {f"language {n}": code for n, code in enumerate(languages)}
        return values | {"judge": filters.judge, "dataset": filters.dataset}


# --- the kept counts with their datasets, and the judges ----------------------------------------------

_JUDGES = Rows(Columns(Judge, "j"))
_COUNTED_DATASETS = Rows(Columns(QueueCount, "qc"), Columns(Dataset, "d"))


def every_count_row() -> list[tuple[tuple, Dataset]]:
    """`queue.count_rows(languages=None, statuses=None)`, every kept count above zero as (language,
    judge_id, dataset_id, status, reasons, n), each with its dataset, in the order of the datasets'
    names (`Dataset.objects.order_by("name")`): one statement for the counts and the datasets they name."""
    counts, datasets = _COUNTED_DATASETS.parts
    sql = (
        f"SELECT {_COUNTED_DATASETS.select()} FROM {counts.table()}"
        f" INNER JOIN {datasets.table()} ON d.id = qc.dataset_id WHERE qc.n > 0 ORDER BY d.name, qc.id"
    )
    rows = []
    for row in run_sql(sql, []):
        count, dataset = _COUNTED_DATASETS.instances(row)
        rows.append(((count.language, count.judge_id, count.dataset_id, count.status, count.reasons, count.n), dataset))
    return rows


def all_judges() -> list[Judge]:
    sql = f"SELECT {_JUDGES.select()} FROM {_JUDGES.parts[0].table()} ORDER BY j.slug"
    return [row[0] for row in map(_JUDGES.instances, run_sql(sql, []))]


# --- the page of items --------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class ShownColumns(Columns):
    """Only the columns a page shows of a model (its primary key among them); the others are deferred,
    as with `QuerySet.only()`."""

    names: tuple[str, ...] = ()

    @property
    def fields(self):
        return [field for field in self.model._meta.concrete_fields if field.name in self.names]


# The queue shows a conversation's external id and a turn's position and text: their JSON columns
# (metadata, entities) are neither read nor decoded.
_ITEMS = Rows(
    Columns(ReviewItem, "ri"),
    ShownColumns(Conversation, "c", names=("id", "dataset", "external_id", "language")),
    ShownColumns(Turn, "t", names=("id", "conversation", "position", "role", "text")),
    Columns(User, "u"),
)


@lru_cache(maxsize=256)
def _items_statement(shape: Shape, after: bool, limit: int) -> Statement:
    """`queue.top_items` for one shape of request: the index walks compiled by the ORM (the filters, the
    keyset, the user's languages), the item with its conversation, turn and holder, and the two
    per-item numbers the page shows."""
    from reviewapp.triage.selectors.queue import after_starts, top_items_shown

    stand_ins, languages, walked_languages, filters = shape.stand_ins()
    keyset = (stand_ins.integer("after priority"), stand_ins.integer("after id")) if after else None
    shown = top_items_shown(filters=filters, languages=languages, sees_all=shape.sees_all)
    parts = walk_parts(
        shown, statuses=_statuses_for(filters), languages=walked_languages, limit=limit, starts=after_starts(keyset)
    )
    if connection.features.supports_slicing_ordering_in_compound:
        # Each walk gives its items' priorities too (they are in the walked index), so the page's
        # `limit` items are chosen among the walks' before anything is joined to them: with a walk per
        # language, the conversation, turn and holder were otherwise looked up for every item walked.
        pairs = [part.values_list("pk", "priority") for part in parts]
        walks, params = compiled(pairs[0].union(*pairs[1:], all=True) if len(pairs) > 1 else pairs[0])
        found = (
            f"ri.id IN (SELECT w.id FROM ({walks}) w (id, priority)"
            f" ORDER BY w.priority DESC, w.id ASC LIMIT {int(limit)})"
        )
    else:
        # SQLite cannot slice the parts of a UNION: each walk is an `id IN (... LIMIT n)` instead.
        pieces = [compiled(part) for part in parts]
        found = " OR ".join(f"ri.id IN ({sql})" for sql, _ in pieces)
        params = tuple(param for _, part_params in pieces for param in part_params)
    user_id = stand_ins.integer("user")
    quote = connection.ops.quote_name
    reviews = quote(Review._meta.db_table)
    item, conversation, turn, holder = _ITEMS.parts
    sql = f"""
SELECT {_ITEMS.select()},
  COALESCE((SELECT COUNT(r.id) FROM {reviews} r WHERE r.item_id = ri.id), 0),
  EXISTS (SELECT 1 FROM {reviews} r WHERE r.item_id = ri.id AND r.reviewer_id = %s)
FROM {item.table()}
INNER JOIN {conversation.table()} ON c.id = ri.conversation_id
LEFT OUTER JOIN {turn.table()} ON t.id = ri.turn_id
LEFT OUTER JOIN {holder.table()} ON u.id = ri.claimed_by_id
WHERE {found}
ORDER BY ri.priority DESC, ri.id ASC LIMIT {int(limit)}"""
    return stand_ins.statement(sql, [user_id, *params])


def items_sql(
    *, user, filters: QueueFilters, languages: list[str], after: tuple[int, int] | None, limit: int
) -> tuple[str, list[Any]] | None:
    """The SQL of `page_items` for this request and its parameters; None when no language is walked."""
    walked_languages = _languages_for(filters, languages)
    if not walked_languages:
        return None
    shape = Shape.of(sees_all=sees_all_languages(user), languages=languages, walked=walked_languages, filters=filters)
    statement = _items_statement(shape, after is not None, limit)
    values = Shape.values(languages, filters) | {"user": user.pk}
    if after is not None:
        values |= {"after priority": after[0], "after id": after[1]}
    return statement.sql, statement.bind(values)


def page_items(
    *, user, filters: QueueFilters, languages: list[str], after: tuple[int, int] | None, limit: int
) -> list[ReviewItem]:
    """`queue.top_items(...)` in one statement compiled once per shape, as instances with their
    conversation, turn and holder, `review_count` and `reviewed_by_me`."""
    bound = items_sql(user=user, filters=filters, languages=languages, after=after, limit=limit)
    if bound is None:
        return []
    items = []
    for row in run_sql(*bound):
        item, conversation, turn, holder, review_count, reviewed_by_me = _ITEMS.instances(row)
        cache_related(item, conversation=conversation, turn=turn, claimed_by=holder)
        item.review_count, item.reviewed_by_me = review_count, bool(reviewed_by_me)
        items.append(item)
    return items


# --- the reviewer's own numbers -----------------------------------------------------------------------


@lru_cache(maxsize=64)
def _progress_statement(vendor: str, sees_all: bool, language_count: int) -> Statement:
    from reviewapp.triage.selectors.queue import progress_queryset

    stand_ins = StandIns()
    queryset = progress_queryset(
        user_id=stand_ins.integer("user"),
        sees_all=sees_all,
        now=stand_ins.moment("now"),
        start_of_day=stand_ins.moment("start of day"),
        languages=[stand_ins.text(f"language {n}") for n in range(language_count)],
    )
    return stand_ins.statement(*compiled(queryset))


def progress_numbers(*, user, now: datetime, start_of_day: datetime, languages: list[str]) -> dict[str, Any]:
    """`queue.progress_queryset(...).get()`, the reviewer's own numbers, compiled once per shape."""
    statement = _progress_statement(connection.vendor, sees_all_languages(user), len(languages))
    values = {"user": user.pk, "now": now, "start of day": start_of_day}
    values |= {f"language {n}": code for n, code in enumerate(languages)}
    with prepared_cursor() as cursor:
        cursor.execute(statement.sql, statement.bind(values))
        names = [column[0] for column in cursor.description]
        rows = cursor.fetchall()
    if len(rows) != 1:
        raise User.DoesNotExist("User matching query does not exist.")
    return dict(zip(names, rows[0], strict=True))
