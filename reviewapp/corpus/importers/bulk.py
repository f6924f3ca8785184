"""The streaming writer: puts conversations into the database a batch at a time, at COPY speed.

Called only by `reviewapp.corpus.services.imports.dataset_import`, inside its transaction, with batches of
`ParsedConversation`s as the parser streams them, so memory holds one batch whatever the input's size.

A dataset created by this import cannot hold a conflicting row, so its rows are written directly:
ids for conversations and turns are taken from the tables' sequences up front (labels and verdicts
point at turns without reading anything back), then every row goes in with PostgreSQL's COPY
(`method="copy"`, psycopg 3 `cursor.copy` through Django's connection) or with multi-row INSERTs
holding as many rows as the database takes parameters (`method="insert"`, SQLite and any other
database). A dataset that
already exists is written by `writer.write_parsed`, batch by batch, which skips the rows it already
holds: a second import of the same input inserts nothing and overwrites nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

import orjson
from django.conf import settings
from django.db import connection, models
from django.utils import timezone

from reviewapp.corpus.importers.audio import store_audio
from reviewapp.corpus.importers.records import (
    LABEL_VALUES,
    TURN_VALUES,
    VERDICT_VALUES,
    ParsedConversation,
    ParsedImport,
)
from reviewapp.corpus.importers.writer import imported_spec, new_judge, spec_hash, write_parsed
from reviewapp.models import Conversation, Dataset, GoldLabel, Judge, JudgeVersion, Sweep, Turn, Verdict

BATCH_CONVERSATIONS = 2000
METHODS = ("copy", "insert")

# Each table's columns in the order of the rows `_write_rows` builds: what the writer resolves, then
# the values the parsed record carries (records.TURN_VALUES ...).
CONVERSATION_FIELDS = ("id", "dataset", "external_id", "language", "metadata")
TURN_FIELDS = ("id", "conversation", *TURN_VALUES)
LABEL_FIELDS = ("judge", "conversation", "turn", "source", *LABEL_VALUES)
VERDICT_FIELDS = ("sweep", "judge_version", "conversation", "turn", "tier", *VERDICT_VALUES)


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
        quote = connection.ops.quote_name
        columns = [fields[name].column for name in given] + [field.column for field in rest]
        self.table = quote(meta.db_table)
        self.column_list = ", ".join(quote(column) for column in columns)
        self.count = len(columns)
        self.statements: dict[int, tuple[str, str]] = {}

    def write(self, rows: list[tuple[Any, ...]]) -> None:
        if not rows:
            return
        defaults = self.defaults
        with connection.cursor() as cursor:
            if self.method == "copy":
                with cursor.copy(f"COPY {self.table} ({self.column_list}) FROM STDIN") as copy:
                    for row in rows:
                        copy.write_row(row + defaults)
                return
            # Multi-row INSERTs, as many rows to a statement as the database takes parameters.
            per_statement = max(1, min(len(rows), _max_params() // self.count))
            for start in range(0, len(rows), per_statement):
                chunk = rows[start : start + per_statement]
                params = [value for row in chunk for value in row + defaults]
                self._insert(cursor, len(chunk), params)

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


def _deferred_foreign_keys(tables: Iterable[Table]) -> list[str]:
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


def _check_foreign_keys(names: list[str], when: str) -> None:
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


class IdBlock:
    """Ids for new rows of one table, taken before the rows are written."""

    def __init__(self, model: type[models.Model]):
        self.table = model._meta.db_table
        self.next_id: int | None = None
        self.sequence: str | None = None

    def take(self, count: int) -> list[int]:
        if count == 0:
            return []
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                if self.sequence is None:
                    cursor.execute("SELECT pg_get_serial_sequence(%s, 'id')", [self.table])
                    self.sequence = cursor.fetchone()[0]
                # nextval is safe beside other writers; the ids of one call need not be consecutive. The
                # sequence is named once: looked up in every row, it cost seven times the nextval itself.
                cursor.execute(
                    "SELECT array_agg(nextval(%s::regclass)) FROM generate_series(1, %s)", [self.sequence, count]
                )
                return cursor.fetchone()[0]
            if self.next_id is None:
                # SQLite: this transaction holds the write lock since it created the dataset, so no
                # other writer takes ids until it commits; AUTOINCREMENT never reuses a deleted id.
                table = connection.ops.quote_name(self.table)
                cursor.execute(f"SELECT COALESCE(MAX(id), 0) FROM {table}")  # noqa: S608
                highest = cursor.fetchone()[0]
                cursor.execute("SELECT seq FROM sqlite_sequence WHERE name = %s", [self.table])
                row = cursor.fetchone()
                self.next_id = max(highest, row[0] if row else 0) + 1
        first = self.next_id
        self.next_id += count
        return list(range(first, first + count))


class StreamWriter:
    """Writes one import: `start`, then `write` per batch of conversations, then `finish`."""

    def __init__(self, *, header: ParsedImport, dataset_name: str, source: str, method: str | None = None):
        if method is None:
            method = "copy" if connection.vendor == "postgresql" else "insert"
        if method not in METHODS or (method == "copy" and connection.vendor != "postgresql"):
            raise ValueError(f"write method {method!r} is not available on {connection.vendor}")
        self.header = header
        self.dataset_name = dataset_name
        self.source = source
        self.method = method
        self.created: dict[str, int] = dict.fromkeys(
            ("dataset", "judges", "judge_versions", "sweeps", "conversations", "turns", "labels", "verdicts"), 0
        )
        self.dataset: Dataset | None = None
        self.direct = False
        self.judge_ids: dict[str, int] = {}
        self.version_ids: dict[tuple[str, str], int] = {}
        self.sweep: Sweep | None = None
        self.verdicts_seen = 0

    def start(self) -> None:
        header = self.header
        self.dataset, created = Dataset.objects.get_or_create(
            name=self.dataset_name,
            defaults={"kind": header.dataset_kind, "source": self.source[:500], "metadata": {"format": header.fmt}},
        )
        self.created["dataset"] = int(created)
        self.direct = created
        if created:
            self.tables = {
                "conversations": Table(Conversation, CONVERSATION_FIELDS, self.method),
                "turns": Table(Turn, TURN_FIELDS, self.method),
                "labels": Table(GoldLabel, LABEL_FIELDS, self.method),
                "verdicts": Table(Verdict, VERDICT_FIELDS, self.method),
            }
            self.ids = {"conversations": IdBlock(Conversation), "turns": IdBlock(Turn)}
            self.checked_per_batch = _deferred_foreign_keys(self.tables.values())
            _check_foreign_keys(self.checked_per_batch, "IMMEDIATE")

    def write(self, conversations: list[ParsedConversation]) -> None:
        self.verdicts_seen += sum(len(c.verdicts) for c in conversations)
        if not self.direct:
            self._write_existing(conversations)
            return
        # Every parser gives each external id once (JSONL and EVA sets refuse a repeat, a CSV groups its
        # rows by id, an EVA run keeps the first record), so no row of a new dataset can conflict.
        self._ensure_judges({item.judge for c in conversations for item in [*c.labels, *c.verdicts]})
        if any(c.verdicts for c in conversations):
            self._ensure_versions({(v.judge, v.version) for c in conversations for v in c.verdicts})
        self._write_rows(conversations)

    def finish(self) -> tuple[Dataset, dict[str, int]]:
        assert self.dataset is not None
        if self.direct:
            _check_foreign_keys(self.checked_per_batch, "DEFERRED")
            self._ensure_judges(set(self.header.judges))
            if self.header.dataset_kind != self.dataset.kind:
                self.dataset.kind = self.header.dataset_kind
                self.dataset.save(update_fields=["kind"])
        sweep = self.sweep
        if sweep is None and self.created["sweeps"]:
            sweep = Sweep.objects.get(
                kind=Sweep.Kind.IMPORT, dataset=self.dataset, params__content_sha256=self.header.content_sha256
            )
        if sweep is not None:
            if not self.direct:  # write_parsed adds the versions of its first batch only
                sweep.judge_versions.add(*set(sweep.verdicts.values_list("judge_version_id", flat=True)))
            sweep.total_targets = self.verdicts_seen
            sweep.verdicts_written = sweep.verdicts.count()
            sweep.save(update_fields=["total_targets", "verdicts_written"])
        return self.dataset, self.created

    # --- a dataset that already exists: conflict-ignoring inserts --------------------------------

    def _write_existing(self, conversations: list[ParsedConversation]) -> None:
        header = self.header
        batch = ParsedImport(
            fmt=header.fmt,
            source=header.source,
            dataset_kind=header.dataset_kind,
            conversations=conversations,
            judges=header.judges,
            content_sha256=header.content_sha256,
        )
        _, created = write_parsed(batch, dataset_name=self.dataset_name, source=self.source)
        for key, value in created.items():
            if key != "dataset":
                self.created[key] += value

    # --- a new dataset: direct writes --------------------------------------------------------------

    def _write_rows(self, conversations: list[ParsedConversation]) -> None:
        assert self.dataset is not None
        dataset_id = self.dataset.pk
        conversation_ids = self.ids["conversations"].take(len(conversations))
        turn_ids = iter(self.ids["turns"].take(sum(len(c.turns) for c in conversations)))
        judge_ids, version_ids = self.judge_ids, self.version_ids
        sweep_id = self.sweep.pk if self.sweep is not None else None
        rows: dict[str, list[tuple[Any, ...]]] = {"conversations": [], "turns": [], "labels": [], "verdicts": []}
        imported_gold, imported_tier = GoldLabel.Source.IMPORTED.value, Verdict.Tier.IMPORTED.value
        for conversation, conversation_id in zip(conversations, conversation_ids, strict=True):
            rows["conversations"].append(
                (conversation_id, dataset_id, conversation.external_id, conversation.language,
                 json_text(conversation.metadata))
            )  # fmt: skip
            at: dict[int | None, int | None] = {None: None}
            for turn in conversation.turns:
                turn_id = next(turn_ids)
                if turn.position in at:  # the first turn at a position is kept, as a conflict would keep it
                    continue
                at[turn.position] = turn_id
                rows["turns"].append(
                    (turn_id, conversation_id, turn.position, turn.role, turn.text, turn.intended_text,
                     turn.audio_start_ms, turn.audio_end_ms, json_text(turn.entities) if turn.entities else "[]",
                     json_text(turn.metadata) if turn.metadata else "{}")
                )  # fmt: skip
            done: set[tuple[Any, ...]] = set()
            for label in conversation.labels:
                key = ("label", label.judge, label.turn_position)
                if key in done:
                    continue
                done.add(key)
                rows["labels"].append(
                    (judge_ids[label.judge], conversation_id, at[label.turn_position], imported_gold, label.rating,
                     label.label, label.passed, json_text(label.failure_modes), label.excluded,
                     json_text(label.metadata))
                )  # fmt: skip
            for verdict in conversation.verdicts:
                key = ("verdict", verdict.judge, verdict.version, verdict.turn_position, verdict.run_index)
                if key in done:
                    continue
                done.add(key)
                rows["verdicts"].append(
                    (sweep_id, version_ids[(verdict.judge, verdict.version)], conversation_id,
                     at[verdict.turn_position], imported_tier, verdict.rating, verdict.label, verdict.passed,
                     verdict.run_index, verdict.status, json_text(verdict.flags), json_text(verdict.sub_scores),
                     verdict.explanation, verdict.raw_text, verdict.problem_code)
                )  # fmt: skip
        for kind in ("conversations", "turns", "labels", "verdicts"):
            self.tables[kind].write(rows[kind])
            self.created[kind] += len(rows[kind])
        store_audio(conversations, dict(zip((c.external_id for c in conversations), conversation_ids, strict=True)))

    def _ensure_judges(self, slugs: Iterable[str]) -> None:
        missing = set(slugs) - self.judge_ids.keys()
        if not missing:
            return
        found = dict(Judge.objects.filter(slug__in=missing).values_list("slug", "id"))
        new = [new_judge(slug, self.header) for slug in sorted(missing - found.keys())]
        if new:
            Judge.objects.bulk_create(new, ignore_conflicts=True)
            found = dict(Judge.objects.filter(slug__in=missing).values_list("slug", "id"))
            self.created["judges"] += len(new)
        self.judge_ids.update(found)

    def _ensure_versions(self, wanted: set[tuple[str, str]]) -> None:
        missing = sorted(wanted - self.version_ids.keys())
        if not missing:
            return
        judge_ids = self.judge_ids
        slug_of = {judge_ids[slug]: slug for slug, _ in missing}
        filters = {"judge_id__in": list(slug_of), "version__in": {version for _, version in missing}}

        def existing() -> dict[tuple[str, str], int]:
            rows = JudgeVersion.objects.filter(**filters).values_list("judge_id", "version", "id")
            return {(slug_of[judge_id], version): pk for judge_id, version, pk in rows}

        found = existing()
        new = []
        for slug, version in missing:
            if (slug, version) not in found:
                spec = imported_spec(slug, version)
                new.append(
                    JudgeVersion(
                        judge_id=judge_ids[slug],
                        version=version,
                        spec=spec,
                        spec_hash=spec_hash(spec),
                        source=self.source[:500],
                    )
                )
        if new:
            # A version label that already exists (imported earlier or defined in Tribunal) is reused as is.
            JudgeVersion.objects.bulk_create(new, ignore_conflicts=True)
            before = len(found)
            found = existing()
            self.created["judge_versions"] += len(found) - before
        ids = [found[key] for key in missing]
        self.version_ids.update({key: found[key] for key in missing})
        if self.sweep is None:
            self.sweep = self._create_sweep()
        self.sweep.judge_versions.add(*ids)

    def _create_sweep(self) -> Sweep:
        """One sweep of kind=import per dataset and imported content (the file's sha256)."""
        now = timezone.now()
        header = self.header
        self.created["sweeps"] = 1
        return Sweep.objects.create(
            kind=Sweep.Kind.IMPORT,
            name=f"import of {header.source}"[:200],
            dataset=self.dataset,
            status=Sweep.Status.DONE,
            params={"source": self.source, "format": header.fmt, "content_sha256": header.content_sha256},
            total_targets=0,
            code_version=getattr(settings, "TRIBUNAL_CODE_VERSION", "")[:64],
            started_at=now,
            finished_at=now,
        )
