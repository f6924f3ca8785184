"""A sweep's verdicts, archived calls and prompts as written: by COPY on PostgreSQL (`make test-postgres`),
by the ORM on SQLite. Each test reads the rows back and compares them with what was given."""

from __future__ import annotations

import pytest
from django.db import connection
from django.utils import timezone
from django.utils.safestring import mark_safe

from reviewapp import copy_writes
from reviewapp.judging.services import calls
from reviewapp.judging.services.sweeps.verdicts import write_verdicts
from reviewapp.models import JudgeCall, PromptText, Verdict
from tests.factories import JudgeVersionFactory, SweepFactory, TurnFactory, VerdictFactory

pytestmark = pytest.mark.django_db

# Every character COPY's text format reads specially, and some it does not.
AWKWARD = 'tab\there, newline\nthere, cr\rback\\slash \\N "quoted" \u00e9t\u00e9 \U0001f600 50%'


def _verdict(sweep, jv, turn, run_index=0, **fields):
    values = {
        "tier": Verdict.Tier.LLM,
        "status": Verdict.Status.RESOLVED,
        "rating": 2.5,
        "label": "",
        "passed": None,
        "flags": ["filler", AWKWARD],
        "sub_scores": {"a": 1, "nested": {"b": [1, None, "x"]}},
        "explanation": AWKWARD,
        "raw_text": "",
        "metadata": {"eva_turn_id": 3},
        **fields,
    }
    return Verdict(
        sweep=sweep, judge_version=jv, conversation_id=turn.conversation_id, turn=turn, run_index=run_index, **values
    )


def _stored(verdict_filter):
    fields = (
        "tier",
        "status",
        "rating",
        "label",
        "passed",
        "flags",
        "sub_scores",
        "explanation",
        "metadata",
        "call_id",
    )
    return list(Verdict.objects.filter(**verdict_filter).order_by("turn_id").values_list(*fields))


def test_verdicts_are_written_with_every_value_as_given():
    jv = JudgeVersionFactory()
    turns = TurnFactory.create_batch(3)
    sweep = SweepFactory(dataset=turns[0].conversation.dataset)
    before = timezone.now()
    given = [
        _verdict(sweep, jv, turns[0]),
        _verdict(sweep, jv, turns[1], rating=None, passed=True, label="ok", flags=[], sub_scores={}, metadata={}),
        _verdict(sweep, jv, turns[2], status=Verdict.Status.UNRESOLVED, rating=None, explanation=mark_safe("")),
    ]
    assert write_verdicts(given) == 3
    assert given == []  # the buffer is emptied for the next batch
    assert _stored({"sweep": sweep}) == [
        ("llm", "resolved", 2.5, "", None, ["filler", AWKWARD], {"a": 1, "nested": {"b": [1, None, "x"]}}, AWKWARD,
         {"eva_turn_id": 3}, None),
        ("llm", "resolved", None, "ok", True, [], {}, AWKWARD, {}, None),
        ("llm", "unresolved", None, "", None, ["filler", AWKWARD], {"a": 1, "nested": {"b": [1, None, "x"]}}, "",
         {"eva_turn_id": 3}, None),
    ]  # fmt: skip
    sweep.refresh_from_db()  # its counters moved with the write: run 0, tier LLM, one unresolved
    assert (sweep.verdicts_written, sweep.escalated, sweep.unresolved, sweep.tier1_resolved) == (3, 3, 1, 0)
    stamps = Verdict.objects.filter(sweep=sweep).values_list("created_at", flat=True)
    assert all(before <= stamp <= timezone.now() for stamp in stamps)


def test_a_verdict_already_written_is_kept_and_the_others_still_go_in():
    """A redelivered chunk beside the original: the verdict the other run wrote stays as it is."""
    jv = JudgeVersionFactory()
    turns = TurnFactory.create_batch(3)
    sweep = SweepFactory(dataset=turns[0].conversation.dataset)
    VerdictFactory(sweep=sweep, judge_version=jv, turn=turns[1], run_index=0, explanation="written first")
    given = [_verdict(sweep, jv, turn, explanation=f"turn {i}") for i, turn in enumerate(turns)]
    given.append(_verdict(sweep, jv, turns[1], run_index=1, explanation="second run"))
    assert write_verdicts(given) == 4
    stored = Verdict.objects.filter(sweep=sweep).order_by("turn_id", "run_index")
    assert [(v.turn_id, v.run_index, v.explanation) for v in stored] == [
        (turns[0].pk, 0, "turn 0"),
        (turns[1].pk, 0, "written first"),
        (turns[1].pk, 1, "second run"),
        (turns[2].pk, 0, "turn 2"),
    ]
    sweep.refresh_from_db()  # counted from the table: the verdict written first is in, once
    assert (sweep.verdicts_written, sweep.escalated, sweep.unresolved) == (4, 2, 0)


def test_archived_calls_with_ids_taken_first_are_the_rows_verdicts_point_at():
    if not copy_writes.copy_supported():
        pytest.skip("COPY and sequences are PostgreSQL's: `make test-postgres`")
    jv = JudgeVersionFactory()
    turn = TurnFactory()
    sweep = SweepFactory(dataset=turn.conversation.dataset)
    prompts = calls.prompt_texts_store(texts=["system", AWKWARD])
    archived = [
        JudgeCall(
            judge_version=jv,
            sweep=sweep,
            model="m",
            params={"temperature": 0},
            system_prompt=prompts["system"],
            user_prompt=prompts[AWKWARD],
            raw_response=AWKWARD,
            response_bytes=12,
            response_truncated=True,
            latency_ms=300,
            attempts=2,
            error="",
        )
        for _ in range(2)
    ]
    assert copy_writes.copy_instances(JudgeCall, archived, new_ids=True, conflicts=False)
    ids = [judge_call.pk for judge_call in archived]
    assert len(set(ids)) == 2 and None not in ids
    assert write_verdicts([_verdict(sweep, jv, turn, call=archived[1])]) == 1
    verdict = Verdict.objects.select_related("call__user_prompt").get(sweep=sweep)
    assert verdict.call_id == ids[1]
    assert (verdict.call.user_prompt.text, verdict.call.raw_response, verdict.call.params) == (
        AWKWARD,
        AWKWARD,
        {"temperature": 0},
    )
    assert (verdict.call.response_truncated, verdict.call.attempts, verdict.call.prompt_tokens) == (True, 2, None)
    assert JudgeCall.objects.filter(pk__in=ids, created_at__isnull=False).count() == 2
    # The next rows the table's own default gives do not collide with the ids taken.
    assert JudgeCall.objects.create(judge_version=jv, model="m", user_prompt=prompts["system"]).pk not in ids


def test_prompts_already_stored_are_reused_and_new_ones_written_once():
    first = calls.prompt_texts_store(texts=["shared system", "old user"])
    second = calls.prompt_texts_store(texts=["shared system", AWKWARD, "new user", AWKWARD])
    assert set(second) == {"shared system", AWKWARD, "new user"}
    assert second["shared system"].pk == first["shared system"].pk
    assert PromptText.objects.count() == 4
    for text, row in second.items():
        assert PromptText.objects.get(pk=row.pk).text == text
        assert row.sha256 == calls.prompt_sha256(text)


def test_a_rows_conflict_writes_none_of_the_copy():
    if connection.vendor != "postgresql":
        pytest.skip("COPY is PostgreSQL's: `make test-postgres`")
    calls.prompt_texts_store(texts=["there"])
    rows = [PromptText(sha256=calls.prompt_sha256(text), text=text) for text in ("new", "there")]
    assert copy_writes.copy_instances(PromptText, rows) is False
    assert sorted(PromptText.objects.values_list("text", flat=True)) == ["there"]
    # The transaction goes on after the refused COPY (its savepoint was rolled back).
    assert copy_writes.copy_instances(PromptText, rows[:1]) is True
    assert sorted(PromptText.objects.values_list("text", flat=True)) == ["new", "there"]
