"""The streaming writer's tables and ids: rows made ready on the reading thread, sent on the writing one.

`Table.prepare` turns a batch's row tuples into what the database is sent (COPY text, or the
parameters of multi-row INSERTs) and `Table.send` sends it. The import's reading thread prepares,
its writing thread sends (importers.pipeline): the writing thread then needs the GIL only to hand
the prepared data to the driver, and the database is fed as soon as a batch is read.

`IdBlock` takes ids for new rows before they are written, so labels and verdicts can point at turns
without reading anything back. On PostgreSQL the ids come from the table's sequence through a
connection of their own (a sequence is outside every transaction: its values are never handed
out twice, and a rolled-back import only leaves a gap, as it would anyway); on SQLite they follow
the highest id, taken once while this transaction holds the write lock.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import date, datetime
from decimal import Decimal
from typing import Any
from uuid import UUID

import orjson
from django.db import connection, models
from django.utils import timezone


def json_text(value: Any) -> str:
    """A JSON column's value as text; orjson, or json for what orjson will not write (integers past
    64 bits, keys that are not strings) exactly as Django's JSONField would."""
    if value == {}:
        return "{}"
    if value == []:
        return "[]"
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return json.dumps(value)


def copy_value(value: Any) -> str:
    """One value in COPY's text format, as PostgreSQL reads it back for its column: a tab between
    columns, \\N for NULL, and backslash, tab, newline and carriage return escaped in values."""
    kind = type(value)
    if kind is str:
        # Four replaces, backslash first: str.translate with a mapping looks each character up in
        # it, 0.33 ms for a 1.8 KB prompt with newlines against 4 us.
        if "\\" in value:
            value = value.replace("\\", "\\\\")
        if "\t" in value:
            value = value.replace("\t", "\\t")
        if "\n" in value:
            value = value.replace("\n", "\\n")
        if "\r" in value:
            value = value.replace("\r", "\\r")
        return value
    if value is None:
        return "\\N"
    if kind is bool:
        return "t" if value else "f"
    if kind is int or kind is float:
        return repr(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal | UUID):
        return str(value)
    raise TypeError(f"no COPY text for {kind.__name__}")


def copy_text(rows: Sequence[Sequence[Any]], tail: str, *, booleans: bool = True) -> bytes:
    """Rows in COPY's text format, each followed by `tail` (the defaults' columns, already formatted).

    With `booleans=False` (no column of the rows holds a bool) a row of strings and numbers is
    formatted by one `%` of a template, as `copy_value` would spell each value, and kept when it has
    no character COPY reads specially beyond its own tabs and newline; a row with a None or such a
    character is formatted value by value. A turn's row took 1.5 us instead of 2.4."""
    if booleans or not rows:
        return "".join(["\t".join([copy_value(value) for value in row]) + tail for row in rows]).encode()
    template = "\t".join(["%s"] * len(rows[0])) + tail.replace("%", "%%")
    tabs, newlines = template.count("\t"), template.count("\n")
    lines = []
    for row in rows:
        if None not in row:
            line = template % tuple(row)
            if "\\" not in line and "\r" not in line and line.count("\t") == tabs and line.count("\n") == newlines:
                lines.append(line)
                continue
        lines.append("\t".join([copy_value(value) for value in row]) + tail)
    return "".join(lines).encode()


# Where a caller writes a NULL into a COPY line it formats itself: no value may hold this character
# (PostgreSQL text cannot, and copy_lines counts them), so each one is a NULL, spelled \N at the end.
NULL_PLACEHOLDER = "\x00"


def copy_lines(lines: list[str], template: str, nulls: int) -> bytes | None:
    """Lines a caller formatted itself, each the shape of `template` (one line of COPY text with its
    tabs, newline and tail, values left as they are, NULLs as NULL_PLACEHOLDER, `nulls` of them in all),
    as COPY text; None when some value holds a character COPY reads specially (a backslash, tab,
    newline or carriage return, or a NUL of its own): the caller then formats those rows value by
    value (`copy_text`). One look at the whole batch instead of four at each line: a value can only
    add to the tabs, newlines and backslashes the template has."""
    text = "".join(lines)
    count = len(lines)
    if (
        text.count("\t") != template.count("\t") * count
        or text.count("\n") != template.count("\n") * count
        or text.count("\\") != template.count("\\") * count
        or "\r" in text
        or text.count(NULL_PLACEHOLDER) != nulls
    ):
        return None
    return (text.replace(NULL_PLACEHOLDER, "\\N") if nulls else text).encode()


class Table:
    """One model's table as the writer fills it: the columns it is given, then every other column at
    the value Django would give it (field default, or now for auto_now_add), computed once."""

    def __init__(self, model: type[models.Model], given: Sequence[str], method: str):
        self.model = model
        self.method = method
        meta = model._meta
        fields = {field.name: field for field in meta.concrete_fields}
        now = timezone.now()
        rest = [field for field in meta.concrete_fields if field.name not in given and not field.primary_key]
        self.defaults = tuple(_default(field, now) for field in rest)
        self.copy_tail = "".join("\t" + copy_value(value) for value in self.defaults) + "\n"
        self.copy_template = "\t".join(["v"] * len(given)) + self.copy_tail  # one row's shape, for copy_lines
        self.booleans = any(isinstance(fields[name], models.BooleanField) for name in given)
        quote = connection.ops.quote_name
        columns = [fields[name].column for name in given] + [field.column for field in rest]
        self.table = quote(meta.db_table)
        self.column_list = ", ".join(quote(column) for column in columns)
        self.count = len(columns)
        self.statements: dict[int, tuple[str, str]] = {}

    def prepare(self, rows: list[tuple[Any, ...]]) -> Any:
        """What `send` sends for these rows: COPY text, or (row count, parameters) per INSERT."""
        if not rows:
            return None
        if self.method == "copy":
            return copy_text(rows, self.copy_tail, booleans=self.booleans)
        defaults = self.defaults
        per_statement = max(1, min(len(rows), _max_params() // self.count))
        return [
            (len(chunk), [value for row in chunk for value in row + defaults])
            for chunk in (rows[start : start + per_statement] for start in range(0, len(rows), per_statement))
        ]

    def send(self, prepared: Any) -> None:
        if prepared is None:
            return
        with connection.cursor() as cursor:
            if self.method == "copy":
                with cursor.copy(f"COPY {self.table} ({self.column_list}) FROM STDIN") as copy:
                    copy.write(prepared)
                return
            for count, params in prepared:
                self._insert(cursor, count, params)

    def _insert(self, cursor: Any, count: int, params: list[Any]) -> None:
        if count not in self.statements:
            group = "(" + ", ".join(["%s"] * self.count) + ")"
            # Table and column names come from the model's meta, quoted; every value is a parameter.
            sql = f"INSERT INTO {self.table} ({self.column_list}) VALUES {', '.join([group] * count)}"  # noqa: S608
            self.statements[count] = (sql, sql.replace("%s", "?"))
        sql, qmark_sql = self.statements[count]
        if connection.vendor == "sqlite" and not connection.queries_logged and not connection.execute_wrappers:
            # The same statement, given to sqlite3 as it is: Django's cursor would rewrite its tens of
            # thousands of placeholders with a regular expression on every call.
            connection.connection.execute(qmark_sql, params)
        else:
            cursor.execute(sql, params)


def _max_params() -> int:
    limit = connection.features.max_query_params
    return 65535 if limit is None else int(limit)


def _default(field: models.Field, now: Any) -> Any:
    stamped = getattr(field, "auto_now_add", False) or getattr(field, "auto_now", False)
    value = now if stamped else field.get_default()
    if isinstance(field, models.JSONField):
        return json_text(value)
    return field.get_db_prep_save(value, connection)


def serial_sequence(cursor: Any, table: str) -> str:
    """PostgreSQL: the sequence that gives `table`'s ids."""
    cursor.execute("SELECT pg_get_serial_sequence(%s, 'id')", [table])
    return cursor.fetchone()[0]


def sequence_ids(cursor: Any, sequence: str, count: int) -> list[int]:
    """PostgreSQL: `count` new values of `sequence`. nextval is safe beside other writers (a value is
    never handed out twice, whatever commits); the ids of one call need not be consecutive. The
    sequence is named once: looked up in every row, it cost seven times the nextval itself."""
    cursor.execute("SELECT array_agg(nextval(%s::regclass)) FROM generate_series(1, %s)", [sequence, count])
    return cursor.fetchone()[0]


class IdBlock:
    """Ids for new rows of one table, taken before the rows are written: `start` on the importing
    thread before the writing thread runs, then `take` from the reading thread, `close` at the end."""

    def __init__(self, model: type[models.Model]):
        self.table = model._meta.db_table
        self.next_id: int | None = None
        self.sequence: str | None = None
        self.sequences: Any = None  # PostgreSQL: the connection that takes ids from the sequence

    def start(self) -> None:
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                self.sequence = serial_sequence(cursor, self.table)
                return
            # SQLite: this transaction holds the write lock since it created the dataset, so no
            # other writer takes ids until it commits; AUTOINCREMENT never reuses a deleted id.
            table = connection.ops.quote_name(self.table)
            cursor.execute(f"SELECT COALESCE(MAX(id), 0) FROM {table}")  # noqa: S608
            highest = cursor.fetchone()[0]
            cursor.execute("SELECT seq FROM sqlite_sequence WHERE name = %s", [self.table])
            row = cursor.fetchone()
            self.next_id = max(highest, row[0] if row else 0) + 1

    def take(self, count: int) -> list[int]:
        if count == 0:
            return []
        if self.sequence is not None:
            if self.sequences is None:
                self.sequences = connection.get_new_connection(connection.get_connection_params())
                self.sequences.autocommit = True
            with self.sequences.cursor() as cursor:
                return sequence_ids(cursor, self.sequence, count)
        assert self.next_id is not None, "IdBlock.start comes first"
        first = self.next_id
        self.next_id += count
        return list(range(first, first + count))

    def close(self) -> None:
        if self.sequences is not None:
            self.sequences.close()
            self.sequences = None


def deferred_foreign_keys(tables: Iterable[Table]) -> list[str]:
    """PostgreSQL: the foreign keys of these tables that are checked at COMMIT (as Django creates them)."""
    if connection.vendor != "postgresql":
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT conname FROM pg_constraint WHERE contype = 'f' AND condeferrable AND condeferred"
            " AND conrelid = ANY(%s::regclass[]) ORDER BY conname",
            [[table.model._meta.db_table for table in tables]],
        )
        return [name for (name,) in cursor.fetchall()]


def check_foreign_keys(names: list[str], when: str) -> None:
    """SET CONSTRAINTS: check these keys at each statement's end (IMMEDIATE) or at COMMIT (DEFERRED).

    Deferred, every row's checks wait for COMMIT and run there one after the other, after the last
    batch: half the server's time for an import. Immediate, each batch's checks run when its COPY ends,
    while the importing thread reads the next batch (importers.pipeline). The same checks run either
    way, so a row pointing at nothing is refused just the same. Only keys declared deferred are
    switched, and they are switched back before the import returns: the setting lasts for the
    transaction, which may go on after the import (a rolled-back savepoint undoes it)."""
    if names:
        with connection.cursor() as cursor:
            # Constraint names come from the catalogue, quoted; `when` is IMMEDIATE or DEFERRED.
            cursor.execute(f"SET CONSTRAINTS {', '.join(map(connection.ops.quote_name, names))} {when}")
