"""Several workers archiving calls with the same prompts at once still store each prompt once."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, connections

from reviewapp.judging.services import calls
from reviewapp.models import Judge, JudgeCall, JudgeVersion, PromptText
from scoring.llm import LLMReply


@pytest.mark.django_db(transaction=True)
def test_concurrent_archives_share_one_row_per_prompt():
    if connection.vendor == "sqlite":
        # SQLite takes one writer at a time, so the race needs PostgreSQL: `make test-postgres`.
        pytest.skip("concurrent inserts race only on PostgreSQL")
    judge = Judge.objects.create(slug="faithfulness")
    version = JudgeVersion.objects.create(judge=judge, version="1", spec={}, spec_hash="b" * 64)
    reply = LLMReply('{"rating": 1}', 10, 3, 100, 1, "")
    workers, each = 8, 5
    start = threading.Barrier(workers)
    failures: list[BaseException] = []

    def archive() -> None:
        try:
            start.wait(timeout=10)
            for i in range(each):
                calls.call_archive(
                    judge_version=version,
                    sweep=None,
                    system="shared system prompt",
                    user=f"shared user prompt {i}",
                    model="m",
                    params={},
                    reply=reply,
                )
        except BaseException as error:  # reported below; a thread's exception is otherwise lost
            failures.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=archive) for _ in range(workers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    assert JudgeCall.objects.count() == workers * each
    assert PromptText.objects.count() == 1 + each
    assert JudgeCall.objects.values("user_prompt").distinct().count() == each
