"""Reads for the call archive page: one archived judge call, what it decided, and its replays."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from reviewapp.judging.services.judges import judge_version_spec
from reviewapp.models import CallReplay, JudgeCall, Verdict
from scoring.parsing import JudgeResult, parse_answer
from scoring.specs import SpecError

REPLAYS_SHOWN = 10


@dataclass
class Answer:
    """One answer as the page shows it: the raw text, pretty when it is JSON, and what it parses to."""

    text: str
    pretty: str
    parsed: JudgeResult | None


@dataclass
class ReplayView:
    replay: CallReplay
    original: Answer
    answer: Answer
    same_text: bool
    same_outcome: bool | None


def _pretty(text: str) -> str:
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False, sort_keys=True)
    except (json.JSONDecodeError, TypeError):
        return text


def _answer(call: JudgeCall, text: str) -> Answer:
    parsed = None
    if text:
        try:
            result = parse_answer(judge_version_spec(call.judge_version), text)
        except (SpecError, KeyError, ValueError):
            result = None  # an imported placeholder spec parses nothing; the raw text is still shown
        parsed = result if isinstance(result, JudgeResult) else None
    return Answer(text=text, pretty=_pretty(text), parsed=parsed)


def _outcome(result: JudgeResult | None) -> tuple[Any, ...] | None:
    if result is None:
        return None
    return (result.status, result.rating, result.label, result.passed, tuple(sorted(result.sub_scores.items())))


def call_archive(*, call_id: int) -> JudgeCall:
    """The call with its prompts, judge version and sweep (one query); DoesNotExist when unknown."""
    return JudgeCall.objects.select_related("system_prompt", "user_prompt", "judge_version__judge", "sweep").get(
        pk=call_id
    )


def call_page(*, call: JudgeCall) -> dict[str, Any]:
    """The archived call, the verdicts written from it and its latest replays, each beside the original."""
    original = _answer(call, call.raw_response)
    verdicts = list(
        Verdict.objects.filter(call=call).select_related("turn", "conversation").order_by("turn__position", "run_index")
    )
    replays = [
        replay_view(call=call, replay=replay, original=original)
        for replay in CallReplay.objects.filter(call=call).select_related("requested_by")[:REPLAYS_SHOWN]
    ]
    return {"call": call, "original": original, "verdicts": verdicts, "replays": replays}


def replay_view(*, call: JudgeCall, replay: CallReplay, original: Answer | None = None) -> ReplayView:
    original = original or _answer(call, call.raw_response)
    answer = _answer(call, replay.raw_response)
    same_outcome = None
    if original.parsed is not None and answer.parsed is not None:
        same_outcome = _outcome(original.parsed) == _outcome(answer.parsed)
    return ReplayView(
        replay=replay,
        original=original,
        answer=answer,
        same_text=original.pretty == answer.pretty,
        same_outcome=same_outcome,
    )
