"""Shared pieces for the sweep, triage and gate tests: judges, a corpus, and a scripted LLM client.

The scripted client stands in for the HTTP endpoint only (the integration test uses the real
openai client against tests/llm_server.py). It answers from markers in the rendered user prompt:
  [[r=N]]        rating N (default 3)            [[bad]]     not JSON
  [[unsure]]     {"uncertain": true}             [[oob]]     rating 9 (outside the scale)
  [[error]]      a transport error (no text)     [[flip]]    rating 1 and 3 on alternate calls
  [[fail:NAME]]  rubric criterion NAME not met
"""

from __future__ import annotations

import dataclasses
import json
import re
import threading
from pathlib import Path

import pytest

from reviewapp.celery import app as celery_app
from reviewapp.models import Conversation, Dataset, Signature, Turn
from reviewapp.services.judges import judge_version_store
from scoring.llm import LLMReply
from scoring.specs import load_specs

ROOT = Path(__file__).resolve().parents[2]
RUBRIC_CRITERIA = (
    "addresses_request",
    "no_unsupported_claims",
    "in_expected_language",
    "confirms_key_details",
    "clear_next_step",
    "one_question_at_a_time",
    "natural_for_speech",
)


def shipped_spec(name: str, /, **changes):
    spec = load_specs(ROOT / "judges" / f"{name}.yaml")[0]
    return dataclasses.replace(spec, **changes) if changes else spec


def store_judge(name: str, /, **changes):
    return judge_version_store(spec=shipped_spec(name, **changes))


class ScriptedLLM:
    def __init__(self):
        self.calls: list[str] = []
        self._flips: dict[str, int] = {}
        self._lock = threading.Lock()

    def complete(self, *, model, system, user, params=None) -> LLMReply:
        with self._lock:
            self.calls.append(user)
            flip = self._flips.get(user, 0)
            self._flips[user] = flip + 1
        if "[[error]]" in user:
            return LLMReply("", None, None, 5, 4, "HTTP 500: server error (after 4 attempts)")
        if "[[bad]]" in user:
            return LLMReply("I think it is fine", 10, 5, 5, 1, "")
        if "[[unsure]]" in user:
            return LLMReply(json.dumps({"uncertain": True, "explanation": "cannot tell"}), 10, 5, 5, 1, "")
        if "## Checklist" in user:
            failing = set(re.findall(r"\[\[fail:(\w+)\]\]", user))
            criteria = {
                name: {"score": 0 if name in failing else 1, "passed": name not in failing} for name in RUBRIC_CRITERIA
            }
            return LLMReply(json.dumps({"criteria": criteria, "explanation": "checked"}), 10, 5, 5, 1, "")
        rating = 3
        if "[[oob]]" in user:
            rating = 9
        elif "[[flip]]" in user:
            rating = 1 if flip % 2 else 3
        elif found := re.search(r"\[\[r=(\d)\]\]", user):
            rating = int(found.group(1))
        answer = {"rating": rating, "explanation": f"rated {rating}", "failure_modes": []}
        return LLMReply(json.dumps(answer), 10, 5, 5, 1, "")


def make_dataset(name: str, conversations: dict[str, tuple[str, list[str]]], *, reviews_required: int = 1) -> Dataset:
    """conversations: external id -> (language, agent texts); each agent turn follows a user turn."""
    dataset = Dataset.objects.create(name=name, reviews_required=reviews_required)
    for external_id, (language, agent_texts) in conversations.items():
        conversation = Conversation.objects.create(dataset=dataset, external_id=external_id, language=language)
        position = 0
        for text in agent_texts:
            Turn.objects.create(conversation=conversation, position=position, role=Turn.Role.USER, text="Hello?")
            Turn.objects.create(conversation=conversation, position=position + 1, role=Turn.Role.AGENT, text=text)
            position += 2
    return dataset


def add_signature(judge, *, language="en", pattern="let me check that for you", rating=1.0, passed=False, **extra):
    return Signature.objects.create(
        judge=judge,
        language=language,
        intent=extra.pop("intent", "filler"),
        kind=extra.pop("kind", Signature.Kind.SUBSTRING),
        pattern=pattern,
        label=extra.pop("label", "overloaded"),
        rating=rating,
        passed=passed,
        **extra,
    )


@pytest.fixture
def scripted_llm(monkeypatch):
    client = ScriptedLLM()
    monkeypatch.setattr("reviewapp.services.sweeps.llm_client", lambda: client)
    return client


@pytest.fixture
def llm_off(monkeypatch):
    monkeypatch.setattr("reviewapp.services.sweeps.llm_client", lambda: None)


@pytest.fixture
def eager_celery():
    previous = celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates
    celery_app.conf.task_always_eager = True
    celery_app.conf.task_eager_propagates = True
    yield celery_app
    celery_app.conf.task_always_eager, celery_app.conf.task_eager_propagates = previous


@pytest.fixture
def run_sweep(eager_celery, django_capture_on_commit_callbacks):
    """Start a sweep and run it to the end in-process (the on-commit dispatch executes eagerly)."""
    from reviewapp.services.sweeps import sweep_start
    from reviewapp.tasks.sweeps import sweep_queue

    def _run(**kwargs):
        with django_capture_on_commit_callbacks(execute=True):
            sweep = sweep_start(**kwargs, dispatch=sweep_queue)
        sweep.refresh_from_db()
        return sweep

    return _run
