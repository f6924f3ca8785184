"""LLM clients that stand in for the HTTP endpoint in-process (the integration tests use the real client
against tests/llm_server.py).

ScriptedLLM answers from markers in the rendered user prompt:
  [[r=N]]        rating N (default 3)            [[bad]]     not JSON
  [[unsure]]     {"uncertain": true}             [[oob]]     rating 9 (outside the scale)
  [[error]]      a transport error (no text)     [[flip]]    rating 1 and 3 on alternate calls
  [[fail:NAME]]  rubric criterion NAME not met
"""

from __future__ import annotations

import json
import re
import threading

from scoring.llm import LLMReply

RUBRIC_CRITERIA = (
    "addresses_request",
    "no_unsupported_claims",
    "in_expected_language",
    "confirms_key_details",
    "clear_next_step",
    "one_question_at_a_time",
    "natural_for_speech",
)
GLOSS = "(gloss)"


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


class CorrectionAwareLLM:
    """Answers speakability prompts: rating 0 when the turn text carries a gloss marker AND the prompt
    holds a drafted corrections block (the new version), else 1. The old version never sees the gloss."""

    def __init__(self):
        self.calls = 0
        self._lock = threading.Lock()

    def complete(self, *, model, system, user, params=None) -> LLMReply:
        with self._lock:
            self.calls += 1
        turn_part = user.split("## Defects", 1)[0]
        rating = 0 if ("## Reviewer corrections" in user and GLOSS in turn_part) else 1
        answer = {"rating": rating, "failure_modes": ["gloss"] if rating == 0 else [], "explanation": f"rated {rating}"}
        return LLMReply(json.dumps(answer), 10, 5, 5, 1, "")
