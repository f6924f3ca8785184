"""A new dataset's foreign keys, checked once per import in set-based SQL instead of once per row.

PostgreSQL checks a foreign key with one trigger call per row: a query that finds the referenced row
and locks it. An import of 100,000 judged turns makes 1.7 million of them (17 per judged turn), and
they were two thirds of the database's time for it. When the import's role may set
`session_replication_role` (a superuser, or on PostgreSQL 15 and later a role granted
`GRANT SET ON PARAMETER session_replication_role TO <role>`), the streaming writer sends each batch's
COPY with that setting at `replica`, for those statements only, so the row triggers do not run. Before
the import commits, `BulkKeys.verify` checks every row it wrote in one statement per table:

- each conversation belongs to the new dataset;
- each turn, gold label and verdict belongs to one of the dataset's conversations (so to a row
  that exists), and its turn, where it names one, is a turn of that same conversation;
- every other key of theirs (judge, judge version, sweep, signature, call: the columns are read
  from the models, so a key added later is checked too) names a row that exists;
- the counts match what the writer sent: a row pointing anywhere else would be missing from them.

The rows outside the import that these keys name (judges, versions, the sweep) are locked `FOR KEY
SHARE` first, as the triggers would have locked them, so no other transaction deletes one before the
import commits. The dataset and its conversations and turns are new in this transaction: no other
transaction sees them until it commits.

A failed check raises IntegrityError naming the table, the column and how many rows, as a trigger's
refusal would, and the import's transaction writes nothing. Without the privilege, on another
database, with `TRIBUNAL_IMPORT_SET_BASED_KEYS=false`, or when one of the tables has a trigger or rule
of its own (which `replica` would switch off as well), the per-row triggers check every row as before.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, models

from reviewapp.models import Conversation


def set_based_keys_available(tables: Iterable[type[models.Model]]) -> bool:
    """Whether this connection may write these tables with the row triggers off, with nothing lost."""
    if connection.vendor != "postgresql" or not getattr(settings, "TRIBUNAL_IMPORT_SET_BASED_KEYS", True):
        return False
    names = [model._meta.db_table for model in tables]
    allowed = "current_setting('is_superuser') = 'on'"
    if connection.pg_version >= 150000:
        allowed += " OR has_parameter_privilege('session_replication_role', 'SET')"
    with connection.cursor() as cursor:
        # `replica` stops a table's own triggers and rules too, and fires those enabled for replicas only:
        # where a written table has any, its rows go through every trigger as usual.
        sql = (  # `allowed` is one of the two constant conditions above
            f"SELECT ({allowed}) AND NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = ANY(%s::regclass[])"  # noqa: S608
            " AND NOT tgisinternal AND tgenabled IN ('O', 'R'))"
            " AND NOT EXISTS (SELECT 1 FROM pg_rewrite WHERE ev_class = ANY(%s::regclass[]) AND rulename <> '_RETURN')"
        )
        cursor.execute(sql, [names, names])
        return cursor.fetchone()[0]


class BulkKeys:
    """The row triggers off around a batch's COPY (`off`, then `on`), and the set-based checks that
    stand in for them (`verify`) before the import commits."""

    def __init__(self, tables: Iterable[type[models.Model]]):
        self.models = list(tables)
        with connection.cursor() as cursor:
            cursor.execute("SELECT current_setting('session_replication_role')")
            self.previous = cursor.fetchone()[0]

    def off(self) -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT set_config('session_replication_role', 'replica', true)")

    def on(self) -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT set_config('session_replication_role', %s, true)", [self.previous])

    def verify(
        self,
        *,
        dataset_id: int,
        conversation_ids: tuple[int, int],
        written: dict[type[models.Model], int],
        parents: dict[type[models.Model], Iterable[int]],
    ) -> None:
        """Check every key of the rows this import wrote, `written[model]` rows per table, after locking
        the rows of `parents` (model -> ids) the way a key check locks what it finds.
        `conversation_ids` are the lowest and highest id of the dataset's conversations."""
        quote = connection.ops.quote_name
        with connection.cursor() as cursor:
            # Table and column names come from the models' meta, quoted; the ids are parameters.
            locks = [
                f"(SELECT count(*) FROM (SELECT 1 FROM {quote(parent._meta.db_table)}"  # noqa: S608
                f" WHERE {quote(parent._meta.pk.column)} = ANY(%s) FOR KEY SHARE) AS locked)"
                for parent in parents
            ]
            if locks:
                cursor.execute(f"SELECT {', '.join(locks)}", [sorted(set(ids)) for ids in parents.values()])
            for model in self.models:
                sql, params, columns = key_check(model, dataset_id, conversation_ids)
                cursor.execute(sql, params)
                total, *missing = cursor.fetchone()
                expected = written.get(model, 0)
                broken = [f"{column} ({count} rows)" for column, count in zip(columns, missing, strict=True) if count]
                if total != expected or broken:
                    table = model._meta.db_table
                    detail = ", ".join(broken) or f"{expected - total} rows point outside the dataset"
                    raise IntegrityError(
                        f"the import's rows in {table} do not all name existing rows: {detail}"
                        f" ({total} of {expected} rows found in the dataset)"
                    )


def key_check(
    model: type[models.Model], dataset_id: int, conversation_ids: tuple[int, int]
) -> tuple[str, list[Any], list[str]]:
    """One statement giving the count of `model`'s rows in the dataset, then per foreign key column the
    count of those rows whose key names no row (or, for a turn, a turn of another conversation).

    The rows are read by the range of the dataset's conversation ids on the index of their
    conversation key (PostgreSQL estimates a range from the index's actual last entries, where the
    new dataset has no statistics yet); a row of another dataset's conversation in that range is read
    and not counted."""
    quote = connection.ops.quote_name
    conversation = Conversation._meta
    if model is Conversation:
        source, scope, params = f"{quote(conversation.db_table)} r", f"r.{quote('dataset_id')} = %s", [dataset_id]
        inside = "count(*)"
    else:
        link = quote(model._meta.get_field("conversation").column)
        # Table and column names come from the models' meta, quoted; the values are parameters.
        source = (
            f"{quote(model._meta.db_table)} r LEFT JOIN {quote(conversation.db_table)} own"
            f" ON own.id = r.{link} AND own.dataset_id = %s"
        )
        scope, params = f"r.{link} BETWEEN %s AND %s", [dataset_id, *conversation_ids]
        inside = "count(own.id)"
    counts, columns, joins = [], [], []
    for field in model._meta.concrete_fields:
        if not field.is_relation or (field.related_model is Conversation and model is not Conversation):
            continue  # the conversation key is the scope itself: a row naming any other is not counted
        parent = field.related_model
        alias = f"p{len(joins)}"
        column = quote(field.column)
        key = f"{alias}.{quote(parent._meta.pk.column)}"
        on = f"{key} = r.{column}"
        if model is not Conversation and any(
            f.is_relation and f.related_model is Conversation for f in parent._meta.concrete_fields
        ):
            parent_link = quote(parent._meta.get_field("conversation").column)
            on += f" AND {alias}.{parent_link} = r.{quote(model._meta.get_field('conversation').column)}"
        # A primary key matches at most one row: the joins add no rows, they only find or miss one.
        joins.append(f" LEFT JOIN {quote(parent._meta.db_table)} {alias} ON {on}")
        owned = "" if model is Conversation else "own.id IS NOT NULL AND "
        counts.append(f"count(*) FILTER (WHERE {owned}r.{column} IS NOT NULL AND {key} IS NULL)")
        columns.append(field.column)
    select = ", ".join([inside, *counts])
    return f"SELECT {select} FROM {source}{''.join(joins)} WHERE {scope}", params, columns  # noqa: S608
