"""Reads written as SQL once and turned back into model instances, for the few hot paths where building
the same statement through the ORM on every request costs more than running it (the review screen,
submitting a label, the signed-in user of every request).

`Columns` names one model's concrete columns under a table alias; `Rows` reads the columns of several
models side by side (a join) back into instances through `Model.from_db`, with the converters the ORM
itself applies (JSON, SQLite's dates), so callers see the same objects as from a queryset. Values always
go as query parameters.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.db import connection
from django.db.models import Model, signals
from django.db.models.base import ModelState
from django.db.models.fields.related_descriptors import ForeignKeyDeferredAttribute
from django.db.models.query_utils import DeferredAttribute


@dataclass(frozen=True)
class Columns:
    """One model's concrete columns under a table alias, and how to turn them back into an instance."""

    model: type[Model]
    alias: str

    @property
    def fields(self):
        return self.model._meta.concrete_fields

    def select(self) -> str:
        quote = connection.ops.quote_name
        return ", ".join(f"{self.alias}.{quote(f.column)}" for f in self.fields)

    def table(self) -> str:
        return f"{connection.ops.quote_name(self.model._meta.db_table)} {self.alias}"

    def converters(self) -> list[tuple[int, list, Any]]:
        found = []
        for index, field in enumerate(self.fields):
            column = field.get_col(self.alias)
            converters = connection.ops.get_db_converters(column) + field.get_db_converters(connection)
            if converters:
                found.append((index, converters, column))
        return found


class Rows:
    """Reads rows of several models side by side (a join) into instances, one `Columns` after another."""

    def __init__(self, *parts: Columns):
        self.parts = parts
        self._converters = {}

    def select(self) -> str:
        return ", ".join(part.select() for part in self.parts)

    def instances(self, row: Sequence[Any]) -> list[Model | None]:
        """The instances of one row (None for a left join that found nothing), then the row's extra columns."""
        shapes = self._converters.get(connection.vendor)
        if shapes is None:
            shapes = self._converters[connection.vendor] = [
                (
                    part.model,
                    [f.attname for f in part.fields],
                    [f.primary_key for f in part.fields].index(True),
                    part.converters(),
                    _builds_plainly(part.model, [f.attname for f in part.fields]),
                )
                for part in self.parts
            ]
        found: list[Any] = []
        start = 0
        alias = connection.alias
        for model, names, pk, converters, plain in shapes:
            values = list(row[start : start + len(names)])
            start += len(names)
            if values[pk] is None:
                found.append(None)
                continue
            for index, functions, column in converters:
                for function in functions:
                    values[index] = function(values[index], column, connection)
            found.append(_built(model, names, values, alias) if plain else model.from_db(alias, names, values))
        return [*found, *row[start:]]


def _builds_plainly(model: type[Model], names: list[str]) -> bool:
    """Whether an instance of `model` read from the database is nothing more than its values under
    their attribute names and a `ModelState` of that database, as `Model.from_db` makes it: no
    pre_init or post_init receiver, and every column's class attribute one of the ORM's own
    descriptors that keep the value in the instance's `__dict__` (a field with a descriptor of its
    own, such as a file field, goes through `from_db`). Columns not read stay out of `__dict__`, which
    is what a deferred field is."""
    if signals.pre_init.has_listeners(model) or signals.post_init.has_listeners(model):
        return False
    return all(
        type(inspect.getattr_static(model, name, None)) in (DeferredAttribute, ForeignKeyDeferredAttribute)
        for name in names
    )


def _built(model: type[Model], names: list[str], values: list[Any], alias: str) -> Model:
    """`model.from_db(alias, names, values)` without `Model.__init__`'s walk over every field: the
    queue page builds some two hundred instances per request, and the walk is most of their cost.
    Only for models `_builds_plainly` accepts. (ForeignKeyDeferredAttribute's `__set__` only drops a
    cached related object, which a new instance has none of.)"""
    new = model.__new__(model)
    new.__dict__.update(zip(names, values, strict=True))
    state = new._state = ModelState()
    state.adding = False
    state.db = alias
    return new


def cache_related(instance: Model, **related: Model | None) -> None:
    """Give `instance` its related objects (`name=object`) read beside it, as `select_related` does: into
    the relation's cache, where `instance.name` finds them. For objects read by the same join that set
    `instance`'s own `<name>_id`; the attribute's descriptor would check and set that id again for
    every object (a queue page sets some 250)."""
    fields = _relation_fields(type(instance))
    for name, value in related.items():
        fields[name].set_cached_value(instance, value)


@lru_cache(maxsize=64)
def _relation_fields(model: type[Model]) -> dict[str, Any]:
    return {field.name: field for field in model._meta.concrete_fields if field.is_relation}


def where_sql(queryset) -> tuple[str, list]:
    """The WHERE of a one-table queryset as SQL on its table's own name, with its parameters."""
    query = queryset.query
    compiler = query.get_compiler(connection=connection)
    sql, params = compiler.compile(query.where)
    return sql, list(params)


def run_sql(sql: str, params: Sequence[Any]) -> list[tuple]:
    with prepared_cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def prepared_cursor():
    """A cursor like `connection.cursor()` (Django's wrapper: health checks, error translation, the
    queries log) whose statements PostgreSQL keeps prepared on the connection: each SQL text is parsed
    and planned by the server once per connection, then executed with its parameters bound by the
    server. Only for the fixed statements of the hot paths, whose SQL text is the same on every request.

    Elsewhere (SQLite), or with `settings.DATABASE_PREPARED_STATEMENTS` off (a pooler in transaction
    mode that does not track prepared statements), the connection's ordinary cursor."""
    if connection.vendor != "postgresql" or not settings.DATABASE_PREPARED_STATEMENTS:
        return connection.cursor()
    # BaseDatabaseWrapper._cursor, with a cursor of our own class.
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    with connection.wrap_database_errors:
        return connection._prepare_cursor(_preparing_cursor())


@lru_cache(maxsize=1)
def _preparing_class():
    from django.db.backends.postgresql.base import ServerBindingCursor

    class Preparing(ServerBindingCursor):
        """psycopg's server-binding cursor, every statement prepared from its first execution."""

        def execute(self, query, params=None, *, prepare=None, binary=None):
            return super().execute(query, params, prepare=True if prepare is None else prepare, binary=binary)

    return Preparing


def _preparing_cursor():
    from django.db.backends.postgresql.psycopg_any import register_tzloader
    from psycopg.postgres import types
    from psycopg.pq import Format

    raw = connection.connection
    if raw.prepare_threshold is None:
        # Django connects with prepare_threshold None, which also refuses `prepare=True`. Only this
        # cursor binds on the server (Django's own cursors bind on the client and never prepare), and it
        # asks for every statement explicitly: the threshold itself is never reached.
        raw.prepare_threshold = 2**31 - 1
    cursor = _preparing_class()(raw)
    # As DatabaseWrapper.create_cursor: the cursor's time zone when the connection's differs.
    loader = connection.connection.adapters.get_loader(types["timestamptz"].oid, Format.TEXT)
    if connection.timezone != loader.timezone:
        register_tzloader(connection.timezone, cursor)
    return cursor
