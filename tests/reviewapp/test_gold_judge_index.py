"""A gold label's judge has no index of its own (migration 0013): gold_judge (judge, excluded) starts with
the same column, and every lookup by judge, the cascade of a deleted judge included, reads it."""

import pytest
from django.db import connection

from reviewapp.models import GoldLabel
from tests import factories

pytestmark = pytest.mark.django_db


def index_names() -> set[str]:
    with connection.cursor() as cursor:
        return {
            name
            for name, found in connection.introspection.get_constraints(cursor, GoldLabel._meta.db_table).items()
            if found["index"]
        }


def test_the_single_column_judge_index_is_gone_and_the_composite_is_there():
    names = index_names()
    assert "gold_judge" in names and "reviewapp_goldlabel_judge_id_4132c404" not in names


@pytest.mark.skipif(connection.vendor != "postgresql", reason="reads PostgreSQL's plans")
def test_lookups_by_judge_and_the_cascade_read_the_composite_index():
    judge = factories.judge("helpful")
    (turn,) = factories.agent_turns("calls", 1)
    GoldLabel.objects.create(judge=judge, conversation=turn.conversation, turn=turn, rating=2)
    with connection.cursor() as cursor:
        cursor.execute("SET LOCAL enable_seqscan = off")  # a tiny table: ask which index serves the lookup
        for sql in (
            "SELECT id FROM reviewapp_goldlabel WHERE judge_id = %s",
            "SELECT id FROM reviewapp_goldlabel WHERE judge_id = %s AND NOT excluded",
        ):
            cursor.execute("EXPLAIN " + sql, [judge.pk])
            plan = "\n".join(row[0] for row in cursor.fetchall())
            assert "gold_judge" in plan, plan
    judge.delete()
    assert not GoldLabel.objects.exists()
