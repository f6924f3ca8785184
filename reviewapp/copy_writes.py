"""Unsaved model instances written with PostgreSQL's COPY, for the hot paths that write many at once
(a sweep's archived calls, prompts and verdicts).

`bulk_create` on PostgreSQL sends its rows as one array per column (`INSERT ... SELECT * FROM
UNNEST(...)`), and with client-side binding psycopg quotes every array element in Python: for a
sweep that quoting, and the ORM's per-field preparation, cost about a tenth of the worker's CPU per
verdict. COPY takes the rows as text formatted once (importers.tables, the import's own format).

COPY has no ON CONFLICT: `copy_instances` writes inside a savepoint and says whether the rows went
in; on a unique violation nothing of them is kept and the caller falls back to the ORM's
`ignore_conflicts` path, so the rows written are the same either way. Ids are taken from the table's
sequence beforehand (`take_ids`) where the caller needs them, as the import does.

Everywhere else (SQLite, the embedded default) `copy_supported()` is false and callers use the ORM.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any

from django.db import IntegrityError, connection, models, transaction

from reviewapp.corpus.importers.tables import Table, json_text, sequence_ids, serial_sequence

_sequences: dict[str, str] = {}  # table -> its id sequence (the same in every connection)


def copy_supported() -> bool:
    return connection.vendor == "postgresql"


def take_ids(model: type[models.Model], count: int) -> list[int]:
    """`count` new ids from the model's id sequence (never handed out twice, whatever commits)."""
    if count == 0:
        return []
    table = model._meta.db_table
    with connection.cursor() as cursor:
        if table not in _sequences:
            _sequences[table] = serial_sequence(cursor, table)
        return sequence_ids(cursor, _sequences[table], count)


def _written_fields(model: type[models.Model], with_ids: bool) -> list[models.Field]:
    """The columns a row gives: every concrete field but an automatic timestamp (Table fills it with
    one `now` for the batch, as the ORM's pre_save would) and, unless given, the id."""
    return [
        field
        for field in model._meta.concrete_fields
        if (with_ids or not field.primary_key)
        and not getattr(field, "auto_now_add", False)
        and not getattr(field, "auto_now", False)
    ]


def _value(field: models.Field, value: Any) -> Any:
    if isinstance(field, models.JSONField):
        return json_text(value)
    if isinstance(value, enum.Enum):  # a TextChoices member: its value, as the ORM sends it
        value = value.value
    if isinstance(value, str) and type(value) is not str:  # a SafeString, say: its text
        return str.__str__(value)
    return value


def copy_instances(
    model: type[models.Model], instances: Sequence[models.Model], *, new_ids: bool = False, conflicts: bool = True
) -> bool:
    """Write these unsaved instances with COPY: True when written, False (nothing written) when a row
    broke a unique constraint. With `new_ids` each instance is given its id from the sequence first
    (`take_ids`), for rows that others point at; without, the table's default gives one and the
    instances keep no pk. `conflicts=False` (rows that cannot conflict, such as rows with new ids in
    a table with no other unique column) skips the savepoint, and an IntegrityError is raised as it
    comes."""
    if not instances:
        return True
    if new_ids:
        for instance, pk in zip(instances, take_ids(model, len(instances)), strict=True):
            instance.pk = pk
    fields = _written_fields(model, new_ids)
    table = Table(model, [field.name for field in fields], "copy")
    attnames = [(field, field.attname) for field in fields]
    rows = [tuple(_value(field, getattr(instance, attname)) for field, attname in attnames) for instance in instances]
    prepared = table.prepare(rows)
    # psycopg's copy() is not wrapped by Django's cursor: its errors are made Django's here.
    if not conflicts:
        with connection.wrap_database_errors:
            table.send(prepared)
    else:
        try:
            with transaction.atomic(), connection.wrap_database_errors:
                table.send(prepared)
        except IntegrityError:
            return False
    for instance in instances:
        instance._state.adding = False
        instance._state.db = connection.alias
    return True
