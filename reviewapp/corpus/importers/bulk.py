"""The streaming writer: puts conversations into the database a batch at a time, at COPY speed.

Called only by `reviewapp.corpus.services.imports.dataset_import`, inside its transaction, with batches of
`ParsedConversation`s as the parser streams them, so memory holds one batch whatever the input's size.

A dataset created by this import cannot hold a conflicting row, so its rows are written directly:
ids for conversations and turns are taken from the tables' sequences up front (labels and verdicts
point at turns without reading anything back), then every row goes in with PostgreSQL's COPY
(`method="copy"`, psycopg 3 `cursor.copy` through Django's connection) or with multi-row INSERTs
holding as many rows as the database takes parameters (`method="insert"`, SQLite and any other
database). On PostgreSQL their foreign keys are checked once per table before the import commits
(importers.keys) where the role may, else row by row by the database's triggers. A dataset that
already exists is written by `writer.write_parsed`, batch by batch, which skips the rows it already
holds: a second import of the same input inserts nothing and overwrites nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import connection
from django.utils import timezone

from reviewapp.corpus.importers.audio import store_audio
from reviewapp.corpus.importers.keys import BulkKeys, set_based_keys_available
from reviewapp.corpus.importers.records import (
    LABEL_VALUES,
    TURN_VALUES,
    VERDICT_VALUES,
    ParsedConversation,
    ParsedImport,
)
from reviewapp.corpus.importers.tables import (
    NULL_PLACEHOLDER,
    IdBlock,
    Table,
    check_foreign_keys,
    copy_lines,
    deferred_foreign_keys,
    json_text,
)
from reviewapp.corpus.importers.writer import imported_spec, new_judge, spec_hash, write_parsed
from reviewapp.models import Conversation, Dataset, GoldLabel, Judge, JudgeVersion, Sweep, Turn, Verdict

BATCH_CONVERSATIONS = 2000
METHODS = ("copy", "insert")
KINDS = ("conversations", "turns", "labels", "verdicts")

# Each table's columns in the order of the rows `_write_rows` builds: what the writer resolves, then
# the values the parsed record carries (records.TURN_VALUES ...).
CONVERSATION_FIELDS = ("id", "dataset", "external_id", "language", "metadata")
TURN_FIELDS = ("id", "conversation", *TURN_VALUES)
LABEL_FIELDS = ("judge", "conversation", "turn", "source", *LABEL_VALUES)
VERDICT_FIELDS = ("sweep", "judge_version", "conversation", "turn", "tier", *VERDICT_VALUES)


@dataclass
class Prepared:
    """One batch made ready by `StreamWriter.prepare` for `StreamWriter.write`: each table's data to send
    (a new dataset), or the conversations for the conflict-ignoring writer (a dataset that exists)."""

    conversations: list[ParsedConversation]
    tables: dict[str, Any] = field(default_factory=dict)
    audio_ids: dict[str, int] = field(default_factory=dict)
    conversation_ids: list[int] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)  # rows per kind
    parents: dict[type, list[int]] = field(default_factory=dict)  # existing rows the batch names


def _turn_rows(
    conversations: list[ParsedConversation], conversation_ids: list[int], turn_ids: list[int]
) -> list[tuple[Any, ...]]:
    """The kept turns of a batch as rows (TURN_FIELDS), the first turn at each position of a conversation."""
    rows, ids = [], iter(turn_ids)
    for conversation, conversation_id in zip(conversations, conversation_ids, strict=True):
        seen: set[int] = set()
        for turn in conversation.turns:
            turn_id = next(ids)
            if turn.position in seen:
                continue
            seen.add(turn.position)
            rows.append(
                (turn_id, conversation_id, turn.position, turn.role, turn.text, turn.intended_text,
                 turn.audio_start_ms, turn.audio_end_ms, json_text(turn.entities) if turn.entities else "[]",
                 json_text(turn.metadata) if turn.metadata else "{}")
            )  # fmt: skip
    return rows


@dataclass
class ParentIds:
    """The rows a batch's labels and verdicts point at outside the dataset, by slug and version."""

    judges: dict[str, int]
    versions: dict[tuple[str, str], int]
    sweep: int | None


@dataclass
class ReadingState:
    """What the batches' preparation counted: rows per kind, verdicts read, rows per language written
    with the counting triggers off (keys.BulkKeys.count)."""

    created: dict[str, int]
    verdicts_seen: int
    counted: dict[str, list[int]]


def _writer_idle() -> None:
    """Without a writing thread, the database is always free for `prepare`."""


class StreamWriter:
    """Writes one import: `start`, then per batch of conversations `prepare` (on the reading thread) and
    `write` (on the writing thread, importers.pipeline), then `finish` and `close`.

    `prepare` builds every row and the text or parameters the database is sent, and takes the rows'
    ids; it uses the import's connection only to create judges, versions and the sweep the batch is
    the first to name, after `wait_idle` says the writing thread has written everything before."""

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
        self.sweep_id: int | None = None  # the import's sweep, made when a batch first names a version
        self.verdicts_seen = 0
        self.keys: BulkKeys | None = None

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
            for block in self.ids.values():
                block.start()
            written = [table.model for table in self.tables.values()]
            if self.method == "copy" and set_based_keys_available(written):
                self.keys = BulkKeys(written)  # keys.py: checked once at `finish`, not row by row
                self.checked_per_batch = []
            else:
                self.checked_per_batch = deferred_foreign_keys(self.tables.values())
                check_foreign_keys(self.checked_per_batch, "IMMEDIATE")

    def prepare(
        self,
        conversations: list[ParsedConversation],
        wait_idle: Callable[[], None] = _writer_idle,
        parents: Callable[[set[str], set[tuple[str, str]]], ParentIds] | None = None,
    ) -> Prepared:
        """The batch's rows, ready to send. The judges and versions it names first are made by
        `provide_parents` once the writing thread is idle, or asked of `parents` (a reading process asks
        the importing one, which alone may write in the import's transaction)."""
        self.verdicts_seen += sum(len(c.verdicts) for c in conversations)
        if not self.direct:
            return Prepared(conversations)
        # Every parser gives each external id once (JSONL and EVA sets refuse a repeat, a CSV groups its
        # rows by id, an EVA run keeps the first record), so no row of a new dataset can conflict.
        judges = {item.judge for c in conversations for item in [*c.labels, *c.verdicts]}
        versions = {(v.judge, v.version) for c in conversations for v in c.verdicts}
        if judges - self.judge_ids.keys() or versions - self.version_ids.keys():
            wait_idle()
            self.learn_parents((parents or self.provide_parents)(judges, versions))
        return self._prepare_rows(conversations)

    def provide_parents(self, judges: set[str], versions: set[tuple[str, str]]) -> ParentIds:
        """The ids of these judges and versions, and of the import's sweep, creating what is missing in
        the import's transaction."""
        if self.keys is not None:  # these rows go through their triggers as usual
            self.keys.on()
        self._ensure_judges(judges)
        if versions:
            self._ensure_versions(versions)
        return ParentIds(dict(self.judge_ids), dict(self.version_ids), self.sweep_id)

    def learn_parents(self, ids: ParentIds) -> None:
        self.judge_ids.update(ids.judges)
        self.version_ids.update(ids.versions)
        self.sweep_id = ids.sweep

    def reading_state(self) -> ReadingState:
        """What `prepare` counted that `finish` needs, for the importing process when a reading
        process prepared the batches."""
        return ReadingState(
            created={kind: self.created[kind] for kind in KINDS},
            verdicts_seen=self.verdicts_seen,
            counted=dict(self.keys.counted) if self.keys is not None else {},
        )

    def adopt_reading_state(self, state: ReadingState) -> None:
        self.created.update(state.created)
        self.verdicts_seen = state.verdicts_seen
        if self.keys is not None:
            self.keys.counted = dict(state.counted)

    def detach(self, prepared: Prepared) -> Prepared:
        """The batch as a reading process sends it: its conversations only where `write` needs them
        (their audio to store), not every parsed turn again."""
        if not self.direct:
            return prepared
        with_audio = [c for c in prepared.conversations if c.audio_file is not None] if prepared.audio_ids else []
        return Prepared(
            with_audio,
            tables=prepared.tables,
            audio_ids=prepared.audio_ids,
            conversation_ids=prepared.conversation_ids,
            counts=prepared.counts,
            parents=prepared.parents,
        )

    def write(self, prepared: Prepared) -> None:
        if not self.direct:
            self._write_existing(prepared.conversations)
            return
        keys = self.keys
        if keys is not None:
            keys.off()
        for kind in KINDS:
            self.tables[kind].send(prepared.tables[kind])
        if keys is not None:  # not after a failed COPY: the transaction is aborted and undoes the setting
            keys.check(
                dataset_id=self.dataset.pk,
                conversation_ids=prepared.conversation_ids,
                written={self.tables[kind].model: prepared.counts[kind] for kind in KINDS},
                parents=prepared.parents,
            )
        if prepared.audio_ids:
            if keys is not None:
                keys.on()
            store_audio(prepared.conversations, prepared.audio_ids)

    def close(self) -> None:
        for block in getattr(self, "ids", {}).values():
            block.close()

    def finish(self) -> tuple[Dataset, dict[str, int]]:
        assert self.dataset is not None
        if self.direct:
            if self.keys is not None:
                self.keys.done(self.dataset.pk)
            check_foreign_keys(self.checked_per_batch, "DEFERRED")
            self._ensure_judges(set(self.header.judges))
            if self.header.dataset_kind != self.dataset.kind:
                self.dataset.kind = self.header.dataset_kind
                self.dataset.save(update_fields=["kind"])
        sweep = None
        if self.sweep_id is not None:
            sweep = Sweep.objects.get(pk=self.sweep_id)
        elif self.created["sweeps"]:  # made by write_parsed, for a dataset that existed
            sweep = Sweep.objects.get(
                kind=Sweep.Kind.IMPORT, dataset=self.dataset, params__content_sha256=self.header.content_sha256
            )
        if sweep is not None:
            if not self.direct:  # write_parsed adds the versions of its first batch only
                sweep.judge_versions.add(*set(sweep.verdicts.values_list("judge_version_id", flat=True)))
            sweep.total_targets = self.verdicts_seen
            sweep.verdicts_written = sweep.verdicts.count()
            fields = ["total_targets", "verdicts_written"]
            if sweep.params.get("content_sha256") != self.header.content_sha256:  # hashed while it was read
                sweep.params = {**sweep.params, "content_sha256": self.header.content_sha256}
                fields.append("params")
            sweep.save(update_fields=fields)
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

    def _prepare_rows(self, conversations: list[ParsedConversation]) -> Prepared:
        assert self.dataset is not None
        dataset_id = self.dataset.pk
        conversation_ids = self.ids["conversations"].take(len(conversations))
        all_turn_ids = self.ids["turns"].take(sum(len(c.turns) for c in conversations))
        turn_ids = iter(all_turn_ids)
        judge_ids, version_ids = self.judge_ids, self.version_ids
        sweep_id = self.sweep_id
        rows: dict[str, list[tuple[Any, ...]]] = {"conversations": [], "labels": [], "verdicts": []}
        imported_gold, imported_tier = GoldLabel.Source.IMPORTED.value, Verdict.Tier.IMPORTED.value
        tally = self.keys.count if self.keys is not None else None
        # COPY: each turn's line written at once (nine turns for every conversation: the bulk of a batch),
        # its NULLs as a NUL placeholder, checked once for the whole batch by copy_lines. INSERT, or a
        # value COPY reads specially: the rows, from `_turn_rows`.
        copy = self.method == "copy"
        lines: list[str] = []
        turn_tail, nulls, kept = self.tables["turns"].copy_tail, 0, 0
        for conversation, conversation_id in zip(conversations, conversation_ids, strict=True):
            if tally is not None:
                before = (kept, len(rows["labels"]), len(rows["verdicts"]))
            rows["conversations"].append(
                (conversation_id, dataset_id, conversation.external_id, conversation.language,
                 json_text(conversation.metadata))
            )  # fmt: skip
            at: dict[int | None, int | None] = {None: None}
            for turn in conversation.turns:
                turn_id = next(turn_ids)
                position = turn.position
                if position in at:  # the first turn at a position is kept, as a conflict would keep it
                    continue
                at[position] = turn_id
                kept += 1
                if not copy:
                    continue
                start, end = turn.audio_start_ms, turn.audio_end_ms
                if start is None:
                    start, nulls = NULL_PLACEHOLDER, nulls + 1
                if end is None:
                    end, nulls = NULL_PLACEHOLDER, nulls + 1
                lines.append(
                    f"{turn_id}\t{conversation_id}\t{position}\t{turn.role}\t{turn.text}\t{turn.intended_text}"
                    f"\t{start}\t{end}\t{json_text(turn.entities) if turn.entities else '[]'}"
                    f"\t{json_text(turn.metadata) if turn.metadata else '{}'}{turn_tail}"
                )
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
            if tally is not None:  # written with the counting triggers off (keys.py)
                tally(
                    conversation.language,
                    (1, kept - before[0], len(rows["labels"]) - before[1], len(rows["verdicts"]) - before[2]),
                )
        prepared = Prepared(conversations, conversation_ids=conversation_ids)
        for kind in KINDS:
            if kind == "turns":
                text = copy_lines(lines, self.tables["turns"].copy_template, nulls) if copy else None
                if text is None:
                    text = self.tables["turns"].prepare(_turn_rows(conversations, conversation_ids, all_turn_ids))
                prepared.tables[kind] = text
            else:
                prepared.tables[kind] = self.tables[kind].prepare(rows[kind])
            count = kept if kind == "turns" else len(rows[kind])
            prepared.counts[kind] = count
            self.created[kind] += count
        if self.keys is not None:
            prepared.parents = {Judge: list(judge_ids.values()), JudgeVersion: list(version_ids.values())}
            if sweep_id is not None:
                prepared.parents[Sweep] = [sweep_id]
        if any(c.audio_file is not None for c in conversations):
            prepared.audio_ids = dict(zip((c.external_id for c in conversations), conversation_ids, strict=True))
        return prepared

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
        if self.sweep_id is None:
            self.sweep_id = self._create_sweep().pk
        Sweep(pk=self.sweep_id).judge_versions.add(*ids)

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
