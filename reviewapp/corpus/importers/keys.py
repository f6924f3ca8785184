"""A new dataset's foreign keys, checked a batch at a time in set-based SQL instead of row by row.

PostgreSQL checks a foreign key with one trigger call per row: a query that finds the referenced row
and locks it. An import of 100,000 judged turns makes 1.7 million of them (17 per judged turn), and
they were two thirds of the database's time for it. When the import's role may set
`session_replication_role` (a superuser, or on PostgreSQL 15 and later a role granted
`GRANT SET ON PARAMETER session_replication_role TO <role>`), the streaming writer sends each batch's
COPY with that setting at `replica`, for those statements only, so the row triggers do not run.
`BulkKeys.check` then checks every row of the batch:

- each conversation belongs to the new dataset;
- each turn, gold label and verdict belongs to one of the dataset's conversations (so to a row
  that exists), and its turn, where it names one, is a turn of that same conversation;
- every other key of theirs (judge, judge version, sweep, signature, call: the columns are read
  from the models, so a key added later is checked too) names a row that exists;
- the counts match what the writer sent: a row pointing anywhere else would be missing from them.

The writing thread checks each batch right after its COPY, in one statement, while the reading thread
reads the next one.

The rows outside the import that these keys name (judges, versions, the sweep) are locked `FOR KEY
SHARE` first, as the triggers would have locked them, so no other transaction deletes one before the
import commits. The dataset and its conversations and turns are new in this transaction: no other
transaction sees them until it commits.

Migration 0018's triggers, which move kept export lines out of date (`EXPORT_LINES`), are off too:
the rows belong to conversations new in this transaction, which no kept line can draw on. The four
tables' own insert triggers that count rows per dataset and language (migration
0014_dataset_counts, `COUNTED_ON_INSERT`) are off with the rest; `BulkKeys` adds what the batches
wrote to those counts itself (`done`), in the same transaction, one upsert per language.

A failed check raises IntegrityError naming the table, the column and how many rows, as a trigger's
refusal would, and the import's transaction writes nothing. Without the privilege, on another
database, with `TRIBUNAL_IMPORT_SET_BASED_KEYS=false`, or when one of the tables has another trigger
or rule of its own (which `replica` would switch off as well), the per-row triggers check and count
every row as before.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.conf import settings
from django.db import IntegrityError, connection, models

from reviewapp.models import Conversation

# The insert triggers of migration 0014_dataset_counts (one per row, one per statement, on each of the
# four tables): BulkKeys counts what they would.
COUNTED_ON_INSERT = tuple(
    f"reviewapp_dataset_count_{table}_{trigger}"
    for table in ("conversations", "turns", "gold_labels", "verdicts")
    for trigger in ("insert", "fold")
)
COUNTED = ("conversations", "turns", "gold_labels", "verdicts")
# The triggers of migration 0018_export_lines on the four tables, which move kept export lines out of
# date: a COPY only inserts, and what it inserts belongs to conversations new in this transaction, so
# no generation row names them and there is nothing to move (exports.services.export_lines).
EXPORT_LINES = tuple(
    f"{table}_{trigger}"
    for table in ("reviewapp_conversation", "reviewapp_turn", "reviewapp_goldlabel", "reviewapp_verdict")
    for trigger in ("export_forget_i", "export_forget_u", "export_forget_d", "export_truncate")
)


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
        # where a written table has any but the counting ones BulkKeys stands in for, its rows go through
        # every trigger as usual.
        sql = (  # `allowed` is one of the two constant conditions above
            f"SELECT ({allowed}) AND NOT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = ANY(%s::regclass[])"  # noqa: S608
            " AND NOT tgisinternal AND tgenabled IN ('O', 'R') AND NOT tgname = ANY(%s))"
            " AND NOT EXISTS (SELECT 1 FROM pg_rewrite WHERE ev_class = ANY(%s::regclass[]) AND rulename <> '_RETURN')"
        )
        cursor.execute(sql, [names, [*COUNTED_ON_INSERT, *EXPORT_LINES], names])
        return cursor.fetchone()[0]


class BulkKeys:
    """The row triggers off for the batches' COPYs (`off`, then `on` before any other write on the
    connection), and the set-based checks that stand in for them (`check`), batch by batch.

    Between two batches the import's connection writes nothing else (its progress goes through a
    connection of its own, its ids come from one), so the setting stays at `replica` from the first
    COPY to the last. Switched off and on around each batch, it made the import of 100,000
    conversations take 15-18 s instead of 11-12 s, and 9-11 s of backend CPU instead of 6-7 s. The
    switches themselves took 0.13 ms each at the server; the statement after each one was what slowed
    (a batch's COPY of 2,000 conversations took 33 ms)."""

    def __init__(self, tables: Iterable[type[models.Model]]):
        self.models = list(tables)
        # Each check is a few thousand index lookups; planned from the stale statistics of tables an
        # import is filling, it can look costly enough for PostgreSQL to compile it (JIT: 0.2 s a
        # statement against 0.02 s of work). JIT is off until `done` (the import's other statements are
        # COPYs and lookups of a few rows).
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT current_setting('session_replication_role'), current_setting('jit'),"
                " set_config('jit', 'off', true)"
            )
            self.previous, self.jit, _ = cursor.fetchone()
        self.is_off = False
        self.counted: dict[str, list[int]] = {}

    def off(self) -> None:
        """The row triggers off for the COPYs that follow; kept off from batch to batch (`on` puts them
        back before anything else is written on the import's connection)."""
        if not self.is_off:
            self._role("replica")
            self.is_off = True

    def on(self) -> None:
        if self.is_off:
            self._role(self.previous)
            self.is_off = False

    def count(self, language: str, written: tuple[int, int, int, int]) -> None:
        """Note rows written with the triggers off: (conversations, turns, gold labels, verdicts) of
        conversations in `language`, added to the dataset's kept counts at `done`."""
        kept = self.counted.setdefault(language, [0, 0, 0, 0])
        for index, n in enumerate(written):
            kept[index] += n

    def done(self, dataset_id: int) -> None:
        """The triggers back on, JIT as it was, and what the batches wrote added to the kept counts."""
        self.on()
        with connection.cursor() as cursor:
            cursor.execute("SELECT set_config('jit', %s, true)", [self.jit])
            if self.counted:
                columns = ", ".join(COUNTED)
                added = ", ".join(f"{column} = kept.{column} + EXCLUDED.{column}" for column in COUNTED)
                languages = sorted(self.counted)  # the dataset is this transaction's own: no other locks its groups
                sql = (  # column names are the constants above; the values are parameters
                    f"INSERT INTO reviewapp_datasetcount AS kept (dataset_id, language, {columns})"  # noqa: S608
                    f" SELECT %s, * FROM unnest(%s::text[], %s::bigint[], %s::bigint[], %s::bigint[], %s::bigint[])"
                    f" ON CONFLICT (dataset_id, language) DO UPDATE SET {added}"
                )
                by_column = [[self.counted[language][index] for language in languages] for index in range(4)]
                cursor.execute(sql, [dataset_id, languages, *by_column])
            self.counted = {}

    def _role(self, role: str) -> None:
        with connection.cursor() as cursor:
            cursor.execute("SELECT set_config('session_replication_role', %s, true)", [role])

    def check(
        self,
        *,
        dataset_id: int,
        conversation_ids: list[int],
        written: dict[type[models.Model], int],
        parents: dict[type[models.Model], Iterable[int]],
    ) -> None:
        """Check every key of one batch's rows, `written[model]` rows per table, whose conversations have
        `conversation_ids`, after locking the rows of `parents` (model -> ids) the way a key check locks
        what it finds. One statement; the writing thread runs it while the next batch is read."""
        quote = connection.ops.quote_name
        # Table and column names come from the models' meta, quoted; the ids are parameters.
        locks = [
            f"(SELECT count(*) FROM (SELECT 1 FROM {quote(parent._meta.db_table)}"  # noqa: S608
            f" WHERE {quote(parent._meta.pk.column)} = ANY(%s) FOR KEY SHARE) AS locked)"
            for parent in parents
        ]
        lock_params: list[Any] = [sorted(set(ids)) for ids in parents.values()]
        ctes, selects, params, names = [], [], [], []
        for number, model in enumerate(self.models):
            cte, expressions, cte_params, columns = key_check(model, f"rows{number}", dataset_id)
            ctes.append(cte)
            selects += expressions
            params += cte_params
            names.append(columns)
        sql = (
            "WITH batch AS MATERIALIZED (SELECT unnest(%s::bigint[]) AS id), "
            f"{', '.join(ctes)} SELECT {', '.join([*locks, *selects])}"
        )
        with connection.cursor() as cursor:
            cursor.execute(sql, [conversation_ids, *lock_params, *params])
            found = list(cursor.fetchone())
        locked, found = found[: len(locks)], found[len(locks) :]
        for parent, ids, count in zip(parents, lock_params, locked, strict=True):
            if count != len(ids):  # deleted since: the checks' snapshot may still show it
                raise IntegrityError(f"{len(ids) - count} of the import's {parent._meta.db_table} rows no longer exist")
        for model, columns in zip(self.models, names, strict=True):
            total, missing = found[0], found[1 : 1 + len(columns)]
            found = found[1 + len(columns) :]
            expected = written.get(model, 0)
            broken = [f"{column} ({count} missing)" for column, count in zip(columns, missing, strict=True) if count]
            if total != expected or broken:
                table = model._meta.db_table
                detail = ", ".join(broken) or f"{expected - total} rows point outside the dataset"
                raise IntegrityError(
                    f"the import's rows in {table} do not all name existing rows: {detail}"
                    f" ({total} of {expected} rows found in the dataset)"
                )


def key_check(model: type[models.Model], name: str, dataset_id: int) -> tuple[str, list[str], list[Any], list[str]]:
    """The checks of `model`'s rows among those of the batch's conversations (the CTE `batch`): a CTE
    `name` of those rows, then the expressions giving their count (for conversations: those of the
    dataset) and, per foreign key column, how many of its values name no row (for a turn: how many
    rows name no turn of their own conversation).

    Conversations are read by id, other rows by their conversation key, and each turn named by its
    id: each a LATERAL subquery that `OFFSET 0` keeps from being flattened, so that no plan scans a
    whole table (a large import leaves the statistics stale, and plans from them once read every turn
    of the database for each batch). Other keys (judge, version, sweep ...) are checked once per
    distinct value. A row naming a conversation outside the batch is not read, so the count falls short
    of what was written; the conversations' own check proves the batch's are the dataset's."""
    quote = connection.ops.quote_name
    meta = model._meta
    relations = [
        field
        for field in meta.concrete_fields
        if field.is_relation and (model is Conversation or field.related_model is not Conversation)
    ]
    if model is Conversation:
        key, wanted = "id", [meta.pk, *relations]
    else:
        key, wanted = meta.get_field("conversation").column, [meta.get_field("conversation"), *relations]
    columns_sql = ", ".join(f"t.{quote(field.column)}" for field in wanted)
    # Table and column names come from the models' meta, quoted; the values are parameters.
    cte = (
        f"{name} AS MATERIALIZED (SELECT t.* FROM batch CROSS JOIN LATERAL"  # noqa: S608
        f" (SELECT {columns_sql} FROM {quote(meta.db_table)} t WHERE t.{quote(key)} = batch.id OFFSET 0) AS t)"
    )
    if model is Conversation:
        expressions, params = [f"(SELECT count(*) FROM {name} WHERE dataset_id = %s)"], [dataset_id]  # noqa: S608
    else:
        expressions, params = [f"(SELECT count(*) FROM {name})"], []  # noqa: S608
    columns = []
    for field in relations:
        parent = field.related_model
        column, pk = quote(field.column), quote(parent._meta.pk.column)
        table = quote(parent._meta.db_table)
        if model is not Conversation and any(
            f.is_relation and f.related_model is Conversation for f in parent._meta.concrete_fields
        ):
            link = quote(parent._meta.get_field("conversation").column)
            own = quote(meta.get_field("conversation").column)
            expressions.append(
                f"(SELECT count(*) FROM {name} r LEFT JOIN LATERAL (SELECT p.{pk} FROM {table} p"  # noqa: S608
                f" WHERE p.{pk} = r.{column} AND p.{link} = r.{own} OFFSET 0) AS p ON TRUE"
                f" WHERE r.{column} IS NOT NULL AND p.{pk} IS NULL)"
            )
        else:
            expressions.append(
                f"(SELECT count(*) FROM (SELECT DISTINCT {column} AS value FROM {name}"  # noqa: S608
                f" WHERE {column} IS NOT NULL) AS v WHERE NOT EXISTS (SELECT 1 FROM {table} p WHERE p.{pk} = v.value))"
            )
        columns.append(field.column)
    return cte, expressions, params, columns
