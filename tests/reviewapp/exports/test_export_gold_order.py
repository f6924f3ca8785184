"""On PostgreSQL every export and keep reads each target's winning gold label in block order
(`export_flat._gold_sql`): walked from the index `gold_judge_block` (migration 0025), sorting only each
target's own labels, so the first rows leave the database before the last label is read, not after
two sorts of them all."""

import importlib
import random

import pytest
from django.db import connection

from reviewapp.exports.selectors import export_sql
from reviewapp.exports.selectors.export_filters import ExportFilters
from reviewapp.exports.selectors.export_flat import _postgres_gold, postgres_gold_between
from reviewapp.models import GoldLabel
from reviewapp.quality.selectors.gold import winning_label
from tests import factories
from tests.factories import ConversationFactory, GoldLabelFactory, TurnFactory

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="the PostgreSQL statements and index"),
]

PER = export_sql.CONVERSATIONS_PER_BLOCK
SOURCES = [choice for choice, _ in GoldLabel.Source.choices]


@pytest.fixture
def labelled():
    """Conversations on both sides of block boundaries (explicit ids, out of the sequence's way), each
    target with one to three labels of mixed sources, some excluded, and conversation-level labels."""
    judge, other = factories.judge("conciseness"), factories.judge("faithfulness")
    dataset = factories.dataset("calls")
    rng = random.Random(7)
    ids = [PER * 1000 + n for n in (0, 1, PER - 1, PER, PER + 1, 3 * PER - 1, 3 * PER, 5 * PER + 7)]
    for conversation_id in reversed(ids):  # created out of order: the heap's order is not the export's
        conversation = ConversationFactory(id=conversation_id, dataset=dataset, external_id=f"c{conversation_id}")
        turns = [TurnFactory(conversation=conversation, position=p) for p in range(3)]
        for target in [*turns[1:], None]:
            for source in rng.sample(SOURCES, rng.randint(1, 3)):
                GoldLabelFactory(
                    judge=judge, conversation=conversation, turn=target, source=source,
                    rating=rng.randint(1, 3), excluded=rng.random() < 0.2,
                )  # fmt: skip
            GoldLabelFactory(judge=other, conversation=conversation, turn=target, source="adjudicated", rating=1)
    return judge


def expected(judge, conversations=None) -> list[tuple[int, int, int | None, int]]:
    """(gold id, conversation, turn, block) of each target's winner by the Python rule, in the
    export's order: by conversation, then turn (a conversation's own label last)."""
    labels = GoldLabel.objects.filter(judge=judge)
    if conversations is not None:
        labels = labels.filter(conversation_id__in=conversations)
    targets: dict[tuple[int, int | None], list[GoldLabel]] = {}
    for label in labels:
        targets.setdefault((label.conversation_id, label.turn_id), []).append(label)
    winners = [winner for winner in map(winning_label, targets.values()) if winner is not None]
    winners.sort(key=lambda w: (w.conversation_id, w.turn_id is None, w.turn_id or 0))
    return [(w.pk, w.conversation_id, w.turn_id, w.conversation_id // PER) for w in winners]


def rows(gold: tuple[str, tuple]) -> list[tuple]:
    statement, params = gold
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT g.id, g.conversation_id, g.turn_id, g.block FROM ({statement}) g", params)  # noqa: S608
        return cursor.fetchall()


def test_each_targets_winner_comes_in_block_order_as_the_python_rule_picks_it(labelled):
    want = expected(labelled)
    assert len({block for *_, block in want}) >= 5 and any(turn is None for _, _, turn, _ in want)
    assert rows(_postgres_gold(labelled, ExportFilters())) == want
    first, end = PER * 1000 + 1, PER * 1000 + 3 * PER  # a keep's window of conversation ids
    inside = [c for c in {c for _, c, _, _ in want} if first <= c < end]
    assert rows(postgres_gold_between(labelled, ExportFilters(), first, end)) == expected(labelled, inside)


def test_the_index_groups_conversations_as_the_exports_blocks_do():
    migration = importlib.import_module("reviewapp.migrations.0025_gold_judge_block")
    assert migration.PER_BLOCK == PER
    with connection.cursor() as cursor:
        cursor.execute("SELECT indexdef FROM pg_indexes WHERE indexname = %s", [migration.NAME])
        (definition,) = cursor.fetchone()
    assert f"judge_id, ((conversation_id / {PER})), conversation_id, turn_id" in definition


def _nodes(plan: dict):
    yield plan
    for child in plan.get("Plans", ()):
        yield from _nodes(child)


def _sorts_of_every_label(plan: dict) -> list[dict]:
    """The sorts in `plan` that take in gold labels of the whole judge (a scan of them not bounded by
    conversation): an incremental sort of each target's labels is not one."""
    found = []
    for node in _nodes(plan):
        if node["Node Type"] != "Sort":
            continue
        for below in _nodes(node):
            scans_labels = below.get("Relation Name") == "reviewapp_goldlabel"
            if scans_labels and "conversation_id" not in below.get("Index Cond", ""):
                found.append(node)
                break
    return found


def _plan(statement: str, params: tuple) -> dict:
    with connection.cursor() as cursor:
        # A test's tables are tiny, and sorting them whole costs the planner nothing: ask whether a plan
        # without a sort of them all exists (on a large table it is the cheaper one, and the one taken).
        # A full sort stays possible at a high cost; an incremental sort is not a full sort.
        for setting in ("enable_seqscan", "enable_bitmapscan", "enable_sort"):
            cursor.execute(f"SET LOCAL {setting} = off")
        cursor.execute("EXPLAIN (FORMAT JSON) " + statement, params)
        return cursor.fetchone()[0][0]["Plan"]


@pytest.mark.parametrize(
    "statement",
    ["gold", "lines", "lines kept", "columns kept", "blocks", "blocks of columns", "a half", "keep blocks"],
)
def test_no_statement_sorts_every_gold_label_before_its_first_row(labelled, statement):
    gold = _postgres_gold(labelled, ExportFilters())
    slug, pk = labelled.slug, int(labelled.pk)
    statements = {
        "gold": lambda: gold,
        "lines": lambda: export_sql.postgres_lines_statement(pk, gold, slug),
        "lines kept": lambda: export_sql.postgres_lines_statement(pk, gold, slug, kept=True),
        "columns kept": lambda: export_sql.postgres_lines_statement(pk, gold, slug, kept=True, columns=True),
        "blocks": lambda: export_sql.postgres_blocks_statement(pk, gold, slug),
        "blocks of columns": lambda: export_sql.postgres_blocks_statement(pk, gold, slug, columns=True),
        "a half": lambda: export_sql.postgres_lines_statement(pk, gold, slug, kept=True, rows=(3, None)),
        "keep blocks": lambda: export_sql.postgres_keep_blocks_statement(pk, gold),
    }
    plan = _plan(*statements[statement]())
    assert not _sorts_of_every_label(plan)
    scans = [node for node in _nodes(plan) if node.get("Index Name") == "gold_judge_block"]
    # the whole judge's labels in order, or one block's (never the judge's walked for a range of them)
    assert scans and scans[0]["Index Cond"] == f"(judge_id = {pk})"
    assert all(_walks_judge_or_block(node["Index Cond"], pk) for node in scans)


def _walks_judge_or_block(condition: str, judge: int) -> bool:
    return condition == f"(judge_id = {judge})" or f"((conversation_id / {PER}) = " in condition


def test_a_keeps_window_reads_its_own_blocks_off_the_index(labelled):
    first, end = PER * 1000 + 1, PER * 1000 + 3 * PER
    statement, params = postgres_gold_between(labelled, ExportFilters(), first, end)
    (scan,) = [node for node in _nodes(_plan(statement, params)) if node.get("Relation Name") == "reviewapp_goldlabel"]
    assert scan.get("Index Name") == "gold_judge_block"
    assert f"((conversation_id / {PER}) >= {first // PER})" in scan["Index Cond"]
    assert f"((conversation_id / {PER}) <= {(end - 1) // PER})" in scan["Index Cond"]
