"""How a per-turn EVA judge's turns are cut into chunks: whole conversations, `chunk_size` of them."""

import pytest

from reviewapp.judging.services.sweeps import plan
from reviewapp.models import Turn
from tests.factories import dataset_of_calls

pytestmark = pytest.mark.django_db


def test_per_turn_chunks_hold_chunk_size_whole_conversations():
    # Seven conversations of 1, 2, 3, 4, 5, 1 and 2 agent turns.
    sizes = [1, 2, 3, 4, 5, 1, 2]
    dataset_of_calls("chunks", {f"c{n}": ("en", [f"turn {k}" for k in range(size)]) for n, size in enumerate(sizes)})
    agent = list(Turn.objects.filter(role=Turn.Role.AGENT).order_by("id"))
    conversation_of = {t.pk: t.conversation_id for t in agent}

    chunks = plan._conversation_chunks([t.pk for t in agent], chunk_size=3)

    per_chunk = [sorted({conversation_of[t] for t in chunk}) for chunk in chunks]
    assert [len(c) for c in per_chunk] == [3, 3, 1]  # conversations per chunk, not turns
    assert [len(chunk) for chunk in chunks] == [1 + 2 + 3, 4 + 5 + 1, 2]
    # Every turn once, and no conversation split between chunks.
    assert sorted(t for chunk in chunks for t in chunk) == sorted(conversation_of)
    seen = [c for conversations in per_chunk for c in conversations]
    assert len(seen) == len(set(seen)) == len(sizes)
