"""Keeping a flat export's lines (ExportLine) so the next JSONL export reads them instead of building
them: a row whose line is kept and current costs the database one lookup instead of seven.

PostgreSQL only (the JSONL lines are built by PostgreSQL; SQLite exports build every row). A kept line
is current while its conversation's generation, the epoch, the schema and the code that builds lines
are all what they were when it was built; migration 0018's triggers move the generation and the
epoch forward in the transaction of every change a line draws on. `refresh` builds the lines that are
missing or no longer current, in four steps, unless nothing they draw on has changed since its last
run (ExportLineState: one statement, 0.1 s at a million gold labels, instead of the walk of them all;
two when another judge's conversations changed):

1. Each conversation with a gold label of the judge gets its generation row (committed on its own).
2. It waits until every transaction of this database that was running then has ended, and every
   snapshot taken before then is gone. A writer that changed a conversation's data before its
   generation row existed had nothing to move forward: waiting for it means the lines are built from
   data that includes its change. (A writer that starts later finds the row, and moves it forward.)
3. The lines are built, batch by batch of conversations (whole blocks of sixteen), each batch one
   INSERT ... SELECT that reads the data and the generations in one snapshot; from SPLIT_FROM_LABELS
   gold labels in two parts at once, the second on a connection of its own, each part taking the
   next batch when it is done with one (`_Batches`), so both build until the last, wherever the
   stale rows lie (each batch stands alone, so neither part needs the other's snapshot).
4. Right after a batch's lines, the part joins the kept lines and CSV rows of each of its blocks
   into one kept block (ExportBlock) where none is current and every line of the block is, for a
   JSONL or Parquet export without filters to read a row per block
   (`export_sql.postgres_blocks_statement`). Then the lines and blocks whose gold labels are gone
   are deleted.

So a line is never read as current beside data it was not built from, whatever the isolation level
of the writers. A refresh that cannot wait (a transaction left open for longer than `wait_seconds`)
builds nothing, and says so; the export then builds every row as before.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from django.db import DatabaseError, connection, transaction
from django.db.models import Exists, OuterRef

from reviewapp.exports.selectors import export_flat, export_sql
from reviewapp.exports.selectors.export_filters import ExportFilters
from reviewapp.models import ExportLine, GoldLabel, Judge

log = logging.getLogger(__name__)

# The advisory lock one refresh of a judge holds: (LOCK_CLASS, the judge's id). Another refresh of the
# same judge polls for it every LOCK_POLL_SECONDS, for at most LOCK_WAIT_SECONDS (a million rows take
# about 80 s to build).
LOCK_CLASS = 0x54524C  # "TRL"
LOCK_POLL_SECONDS = 0.2
LOCK_WAIT_SECONDS = 1800.0

# Conversations whose lines one INSERT builds: about 0.6 s of one core at the benchmark's 1 row each,
# so that when one part takes the last batch the other waits at most that long. A multiple of
# export_sql.CONVERSATIONS_PER_BLOCK, so the blocks' batches hold whole blocks.
CONVERSATIONS_PER_BATCH = 10_000
# From this many gold labels a refresh builds in two parts at once, each on its own connection, as an
# export reads its two halves: the database builds lines on two cores (below it, a second connection
# costs more than it saves).
SPLIT_FROM_LABELS = 20_000

# A transaction of this database that started before the mark (its id is older) is still running, or a
# snapshot taken before it is still held. Other databases' transactions cannot touch these tables, so
# they are not waited for (pg_snapshot_xmin would count them: one long statement in another database of
# the cluster would hold every refresh back).
_WAITING = """
SELECT EXISTS (
    SELECT 1 FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND datname = current_database()
    AND backend_type = 'client backend' AND (
        backend_xid IS NOT NULL AND age(backend_xid) > age((%(mark)s::bigint %% 4294967296)::text::xid)
        OR backend_xmin IS NOT NULL AND age(backend_xmin) > age((%(mark)s::bigint %% 4294967296)::text::xid)))
"""


# What a judge's kept lines stand on (ExportLineState), in three parts:
# - `state`: the code and schema, the epoch, and the count, largest id, sum of ids and sum of id times
#   conversation of the judge's gold labels (a gold label of a conversation with no generation row yet
#   moves no generation; one moved to another conversation changes the set `judge_generations` reads).
#   Each factor is taken modulo a prime below 2^20, so the product stays in 64 bits: a numeric product
#   doubled the read's time at a million gold labels;
# - `generations`: the count and sum of every conversation's generation (generations only move forward;
#   a deleted one moves the epoch): one read of a narrow table;
# - `judge_generations`: the same of the conversations the judge has gold labels in, a join of them.
# Read after a refresh's generation rows are committed and before it waits for older transactions: a
# change committed before the read is in what it builds, one committed later changes what the next read
# gives. (Only constant SQL is formatted in.)
_OWN_STATE = f"""concat_ws(':', %(fingerprint)s,
    coalesce(({export_sql.MIGRATION})::text, '-'), coalesce(({export_sql.EPOCH})::text, '-'),
    (SELECT count(*) || '/' || coalesce(max(id), 0) || '/' || coalesce(sum(id), 0)
        || '/' || coalesce(sum((id %% 1000003) * (conversation_id %% 1000003)), 0)
        FROM reviewapp_goldlabel WHERE judge_id = %(judge)s))"""  # noqa: S608
_GENERATIONS = "(SELECT count(*) || '/' || coalesce(sum(generation), 0) FROM reviewapp_exportgeneration)"
_JUDGE_GENERATIONS = """(SELECT count(*) || '/' || coalesce(sum(eg.generation), 0) FROM reviewapp_exportgeneration eg
    WHERE eg.conversation_id IN (SELECT g.conversation_id FROM reviewapp_goldlabel g WHERE g.judge_id = %(judge)s))"""
_STATE = f"SELECT {_OWN_STATE}, {_GENERATIONS}, {_JUDGE_GENERATIONS}"
# Nothing to build: the state reads as the last refresh left it, and the judge still has kept lines
# (a table emptied by hand, or by a crash, keeps no state worth trusting). First with every
# conversation's generations (one narrow read); when only those moved, with the judge's own.
_KEPT = (
    "EXISTS (SELECT 1 FROM reviewapp_exportline x WHERE x.judge_id = %(judge)s)"
    " AND EXISTS (SELECT 1 FROM reviewapp_exportblock x WHERE x.judge_id = %(judge)s)"
)
_UNCHANGED = f"""
SELECT s.state = {_OWN_STATE} AND {_KEPT}, s.generations = {_GENERATIONS}
FROM reviewapp_exportlinestate s WHERE s.judge_id = %(judge)s
"""  # noqa: S608
# The judge's own part is not read again here: the refresh that takes this path keeps `state` as it
# was, so a change to it committed after `_UNCHANGED` read it is found by the next refresh.
_JUDGE_UNCHANGED = f"""
SELECT s.judge_generations = {_JUDGE_GENERATIONS}, {_GENERATIONS}
FROM reviewapp_exportlinestate s WHERE s.judge_id = %(judge)s
"""  # noqa: S608
_KEEP_STATE = """
INSERT INTO reviewapp_exportlinestate (judge_id, state, generations, judge_generations)
VALUES (%(judge)s, %(state)s, %(generations)s, %(judge_generations)s)
ON CONFLICT (judge_id) DO UPDATE SET state = EXCLUDED.state, generations = EXCLUDED.generations,
    judge_generations = EXCLUDED.judge_generations
"""
UNCHANGED = "nothing changed since the last refresh"
OTHERS_CHANGED = "only other judges' conversations changed since the last refresh"


@dataclass
class Refreshed:
    """What one refresh did: lines built, seconds taken, and whether it could run at all."""

    built: int = 0
    blocks: int = 0  # kept blocks composed (ExportBlock)
    seconds: float = 0.0
    ran: bool = False
    reason: str = ""


def available() -> bool:
    """Lines are kept on PostgreSQL only, and only outside a transaction (each step commits)."""
    return connection.vendor == "postgresql" and not connection.in_atomic_block


def refresh(
    judge: Judge, *, wait_seconds: float = 60.0, poll_seconds: float = 0.05, when_busy: str = "wait"
) -> Refreshed:
    """Build the kept lines of `judge`'s rows (each target's winning gold label, no filters) that are
    missing or no longer current; see the module's docstring for why they can be trusted.

    One refresh of a judge runs at a time (a PostgreSQL advisory lock): another one waits for it
    (`when_busy="wait"`: what an import, a sweep or an export queues must see its own writes), or
    returns at once having built nothing (`"skip"`: the periodic keep, which comes again)."""
    started, done = time.monotonic(), Refreshed()
    if not available():
        done.reason = "lines are kept on PostgreSQL, outside a transaction"
        return done
    with connection.cursor() as cursor:
        # Polled, not a blocking pg_advisory_lock: a statement blocked on the lock would hold a
        # snapshot, which the refresh holding it waits to see gone (step 2): each would wait for the other.
        while True:
            cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [LOCK_CLASS, judge.pk])
            if cursor.fetchone()[0]:
                break
            if when_busy == "skip" or time.monotonic() - started > LOCK_WAIT_SECONDS:
                done.reason = "another refresh of this judge is running"
                done.seconds = time.monotonic() - started
                return done
            time.sleep(LOCK_POLL_SECONDS)
        try:
            return _refresh(cursor, judge, done, started, wait_seconds, poll_seconds)
        finally:
            try:
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [LOCK_CLASS, judge.pk])
            except DatabaseError:  # the session cannot say it: it ends, and the lock with it
                connection.close()


def _refresh(
    cursor, judge: Judge, done: Refreshed, started: float, wait_seconds: float, poll_seconds: float
) -> Refreshed:
    # the blocks' fingerprint covers the lines': new code for either makes the next refresh run
    state_params = {"fingerprint": export_sql.block_fingerprint(), "judge": judge.pk}
    cursor.execute(_UNCHANGED, state_params)
    unchanged, reason = cursor.fetchone(), ""
    if unchanged and unchanged[0] and unchanged[1]:
        reason = UNCHANGED
    elif unchanged and unchanged[0]:  # only generations moved: were any of them this judge's conversations?
        cursor.execute(_JUDGE_UNCHANGED, state_params)
        own = cursor.fetchone()
        if own and own[0]:  # no: what moved is now part of what these lines stand on
            cursor.execute(
                "UPDATE reviewapp_exportlinestate SET generations = %s WHERE judge_id = %s", [own[1], judge.pk]
            )
            reason = OTHERS_CHANGED
    if reason:
        done.ran, done.reason = True, reason
        done.seconds = time.monotonic() - started
        return done
    # Without its one row (a flush of the tables) no line is current; the row comes back with
    # no line kept, since a name changed meanwhile moved no epoch.
    with transaction.atomic():
        cursor.execute("INSERT INTO reviewapp_exportepoch (id, epoch) VALUES (1, 0) ON CONFLICT (id) DO NOTHING")
        if cursor.rowcount:
            cursor.execute("DELETE FROM reviewapp_exportline")
            cursor.execute("DELETE FROM reviewapp_exportblock")
            cursor.execute("DELETE FROM reviewapp_exportlinestate")
    cursor.execute(  # the missing rows found by one anti-join, not a conflict check per gold label
        "INSERT INTO reviewapp_exportgeneration (conversation_id, generation)"
        " SELECT DISTINCT g.conversation_id, 0 FROM reviewapp_goldlabel g WHERE g.judge_id = %s AND NOT EXISTS"
        " (SELECT 1 FROM reviewapp_exportgeneration e WHERE e.conversation_id = g.conversation_id)"
        " ON CONFLICT (conversation_id) DO NOTHING",
        [judge.pk],
    )
    cursor.execute(_STATE, state_params)
    state, generations, judge_generations = cursor.fetchone()
    cursor.execute("SELECT pg_snapshot_xmax(pg_current_snapshot())::text")
    mark = int(cursor.fetchone()[0])
    while True:
        cursor.execute(_WAITING, {"mark": mark})
        if not cursor.fetchone()[0]:
            break
        if time.monotonic() - started > wait_seconds:
            done.reason = f"a transaction stayed open for more than {wait_seconds:.0f} s"
            log.warning("export lines of %s not built: %s", judge.slug, done.reason)
            done.seconds = time.monotonic() - started
            return done
        time.sleep(poll_seconds)
    cursor.execute(
        "SELECT count(*), EXISTS (SELECT 1 FROM reviewapp_exportline WHERE judge_id = %s)"
        " FROM reviewapp_goldlabel WHERE judge_id = %s",
        [judge.pk, judge.pk],
    )
    labels, had_lines = cursor.fetchone()
    two = labels >= SPLIT_FROM_LABELS
    cursor.execute(export_flat.LINES_SETTINGS)
    try:
        if labels:
            done.built, done.blocks = _build_in_parts(cursor, judge, _Batches.of(cursor, judge), two=two)
        # What is gone is deleted once every batch is built and composed: exports read the kept
        # rows and blocks from then on, whatever these scans find (no export reads a line of a gold
        # label that is gone, nor a block whose conversations have none).
        if had_lines:  # lines whose gold label is gone (or another judge's now): a scan of the judge's lines
            # With none before, every line is this refresh's, of a label it read: one deleted since
            # changes the gold labels' count and sums the next refresh compares, so it runs and finds
            # the line here (at a million lines this scan took 1.1-3.7 s).
            cursor.execute(
                "DELETE FROM reviewapp_exportline x WHERE x.judge_id = %s AND NOT EXISTS"
                " (SELECT 1 FROM reviewapp_goldlabel g WHERE g.id = x.gold_id AND g.judge_id = x.judge_id)",
                [judge.pk],
            )
        cursor.execute(  # blocks of conversations with no gold label of the judge left: an anti-join on the block
            "DELETE FROM reviewapp_exportblock x WHERE x.judge_id = %s AND NOT EXISTS (SELECT 1 FROM"
            " (SELECT DISTINCT g.conversation_id / %s AS block FROM reviewapp_goldlabel g WHERE g.judge_id = %s) b"
            " WHERE b.block = x.block)",
            [judge.pk, export_sql.CONVERSATIONS_PER_BLOCK, judge.pk],
        )
        cursor.execute(
            _KEEP_STATE,
            {"judge": judge.pk, "state": state, "generations": generations, "judge_generations": judge_generations},
        )
    finally:
        cursor.execute(export_flat.LINES_RESET)
    done.ran, done.seconds = True, time.monotonic() - started
    log.info("export lines of %s: %d built, %d blocks in %.1f s", judge.slug, done.built, done.blocks, done.seconds)
    return done


class _Batches:
    """The batches of conversation ids a refresh builds: the windows of CONVERSATIONS_PER_BATCH ids
    (read when made; a multiple of CONVERSATIONS_PER_BLOCK, so each window holds whole blocks and
    each block is composed by one part, whole) that hold a gold label of the judge, each handed out
    once, in order, to whichever part asks next. With a fixed split the stale rows of an import (its
    conversations, all past the kept ones) fell in the second part alone: the keep of 100,000 new
    rows beside 100,000 kept took 12.9 s, against 8.6-8.9 s taken batch by batch. Only the windows
    with a gold label: a judge whose labels are spread over millions of ids is not a statement per
    empty window."""

    def __init__(self, starts: list[int], size: int) -> None:
        self.size = size
        self._starts = iter(starts)
        self._lock = threading.Lock()

    @classmethod
    def of(cls, cursor, judge: Judge) -> _Batches:
        """The windows of `judge`'s gold labels, one read of them by their index."""
        size = CONVERSATIONS_PER_BATCH
        cursor.execute(
            "SELECT DISTINCT conversation_id / %s FROM reviewapp_goldlabel WHERE judge_id = %s ORDER BY 1",
            [size, judge.pk],
        )
        return cls([window * size for (window,) in cursor.fetchall()], size)

    def next(self) -> tuple[int, int] | None:
        """The next batch's first id and end, or None once all are handed out."""
        with self._lock:
            start = next(self._starts, None)
        return None if start is None else (start, start + self.size)


def _build_in_parts(cursor, judge: Judge, batches: _Batches, *, two: bool) -> tuple[int, int]:
    """Build the lines and then compose the blocks of each of `batches` (`_build_batches`): with
    `two`, in two parts at once, the second on a connection of its own (`_Part`), each taking the
    next batch as it is done with one. A failure on either side stops the other between batches and
    is raised once both have ended; what was built stays (each batch commits). Gives how many lines
    were built and blocks composed."""
    if not two:
        return _build_batches(cursor, judge, batches)
    part = _Part(judge, batches)
    part.start()
    try:
        built, composed = _build_batches(cursor, judge, batches, part.failed)
    except BaseException:
        part.stop.set()
        raise
    finally:
        part.join()
    if part.error is not None:
        raise part.error
    return built + part.built, composed + part.composed


def _build_batches(cursor, judge: Judge, batches: _Batches, stop: threading.Event | None = None) -> tuple[int, int]:
    """For each batch `batches` hands out, build its missing or stale lines (`_build_between`), then
    compose its blocks from them (`_build_blocks`) at once: an export reads the kept blocks of the
    first batches while the last are built (a keep that composed every block after every line left
    exports slow until its end). Stops between batches once `stop` is set. Gives how many lines it
    built and blocks it composed."""
    built = composed = 0
    while (stop is None or not stop.is_set()) and (batch := batches.next()) is not None:
        built += _build_between(cursor, judge, *batch)
        composed += _build_blocks(cursor, judge, *batch)
    return built, composed


def _build_between(cursor, judge: Judge, first: int, end: int) -> int:
    """Build the missing or stale lines of the conversations with ids from `first` up to (not with)
    `end` in one INSERT ... SELECT in its own transaction (`cursor` is the connection's, under
    LINES_SETTINGS). Returns how many it built."""
    gold = export_flat.postgres_gold_between(judge, ExportFilters(), first, end)
    statement, params = export_sql.postgres_lines_statement(int(judge.pk), gold, judge.slug, keep=True)
    with transaction.atomic():
        # The INSERT looks up each row's kept line in the table it fills. Planned while that
        # table is still small (the first refresh), the lookup would be a scan of the growing
        # table per row: minutes for 100,000 lines instead of seconds. The index is the plan.
        cursor.execute("SET LOCAL enable_seqscan = off")
        cursor.execute(statement, params)
        return cursor.rowcount


def _build_blocks(cursor, judge: Judge, first: int, end: int) -> int:
    """Compose the kept blocks (ExportBlock) of the conversations from `first` (a block's first id)
    up to `end` (a block's first id, or past the last conversation) that have none current, from
    their current kept lines, in one INSERT in its own transaction. Gives how many it composed."""
    gold = export_flat.postgres_gold_between(judge, ExportFilters(), first, end)
    statement, params = export_sql.postgres_keep_blocks_statement(int(judge.pk), gold)
    with transaction.atomic():
        cursor.execute("SET LOCAL enable_seqscan = off")  # as for the lines: lookups by index
        cursor.execute(statement, params)
        return cursor.rowcount


class _Part(threading.Thread):
    """The second part of a refresh, building the lines and composing the blocks of the batches it
    takes from `batches` (`_build_batches`) on a connection of its own (this thread's), while the
    refresh builds those it takes: the database builds on both cores. Keeps what it built and what
    went wrong for the refresh; stops between batches when asked."""

    def __init__(self, judge: Judge, batches: _Batches) -> None:
        super().__init__(name="export-lines-part", daemon=True)
        self.judge, self.batches = judge, batches
        self.stop = threading.Event()  # set by the refresh when its own part failed
        self.failed = threading.Event()  # set here when this part failed
        self.built = self.composed = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            with connection.cursor() as cursor:
                cursor.execute(export_flat.LINES_SETTINGS)
                self.built, self.composed = _build_batches(cursor, self.judge, self.batches, self.stop)
        except BaseException as exc:
            self.error = exc
            self.failed.set()
        finally:
            connection.close()


def refresh_after_bulk_write(
    dataset_id: int | None, judge_ids: Sequence[int] = (), *, wait_seconds: float = 10.0
) -> list[Refreshed]:
    """Keep the lines an import or a sweep brought or made stale: those of every judge with a gold
    label in the dataset, or of `judge_ids` when there is none (a sweep without a dataset of its
    own). A refresh that cannot wait `wait_seconds` for older transactions builds nothing (the next
    export then builds its rows, and keeps them after)."""
    if not available():
        return []
    if dataset_id is not None:
        judge_ids = GoldLabel.objects.filter(conversation__dataset_id=dataset_id).values("judge_id")
    judges = Judge.objects.filter(pk__in=judge_ids).order_by("pk")
    return [refresh(judge, wait_seconds=wait_seconds) for judge in judges]


def keep_current(*, wait_seconds: float = 10.0) -> list[tuple[str, Refreshed]]:
    """Bring the kept lines of every judge that has some back to current: what Celery beat runs every
    TRIBUNAL_EXPORT_LINES_KEEP_SECONDS, for the changes no hook keeps at once (a triage, a rename,
    a deploy with new code or a new migration, reviewers' labels). Each judge's refresh builds only
    what went stale, and nothing when all is current; a judge whose refresh is running is skipped."""
    if not available():
        return []
    judges = Judge.objects.filter(Exists(ExportLine.objects.filter(judge_id=OuterRef("pk")))).order_by("pk")
    return [(judge.slug, refresh(judge, wait_seconds=wait_seconds, when_busy="skip")) for judge in judges]
