"""Send an archived judge call again and show the archived and the new answer side by side."""

from __future__ import annotations

import difflib
import json

from django.core.management.base import BaseCommand, CommandError

from reviewapp.judging.services import calls, judge_inputs, judges
from reviewapp.models import JudgeCall
from scoring import eva, eva_answers


def _tokens(prompt: int | None, completion: int | None) -> str:
    if prompt is None and completion is None:
        return "-"
    return f"{prompt if prompt is not None else '?'} in / {completion if completion is not None else '?'} out"


def _pretty(text: str) -> str:
    """JSON answers are compared key by key: indent them; anything else is shown as it came."""
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False, sort_keys=True)
    except (json.JSONDecodeError, TypeError):
        return text


def per_turn_rows(call: JudgeCall, new_text: str) -> list[tuple[int, str, str]]:
    """(EVA turn id, archived, replay) when the call rated a conversation's turns one by one, else []."""
    spec = judges.judge_version_spec(call.judge_version) if "user_template" in (call.judge_version.spec or {}) else None
    profile = eva.profile_for(spec.eva_profile) if spec is not None and spec.eva_profile else None
    if profile is None or not profile.per_turn:
        return []
    verdicts = list(call.verdicts.select_related("conversation").order_by("turn_id"))
    if not verdicts:
        return []
    conversation = verdicts[0].conversation
    record = judge_inputs.eva_record(conversation, list(conversation.turns.order_by("position")))
    rated = sorted({v.metadata["eva_turn_id"] for v in verdicts if "eva_turn_id" in (v.metadata or {})})
    return eva_answers.per_turn_side_by_side(
        profile, call.raw_response, new_text, turn_ids=record.turn_ids(), rated=rated
    )


class Command(BaseCommand):
    help = "Re-send an archived LLM judge call and print the archived and the new answer side by side."

    def add_arguments(self, parser):
        parser.add_argument("call_id", type=int, help="JudgeCall id")
        parser.add_argument("--base-url", help="OpenAI-compatible endpoint (default: OPENAI_BASE_URL)")
        parser.add_argument("--api-key", help="API key (default: OPENAI_API_KEY)")
        parser.add_argument("--model", help="send to this model instead of the archived one")

    def handle(self, *args, call_id: int, base_url: str | None, api_key: str | None, model: str | None, **options):
        call = JudgeCall.objects.filter(pk=call_id).first()
        if call is None:
            raise CommandError(f"No archived call with id {call_id}.")
        client = calls.llm_client_from_settings(base_url=base_url, api_key=api_key)
        if client is None:
            raise CommandError(f"{calls.llm_tier_off_reason()} Or pass --base-url.")
        old, new = calls.call_replay(call=call, client=client, model=model)

        rows = [
            ("", "archived", "replay"),
            ("model", old.model, model or old.model),
            ("when", old.created_at.strftime("%Y-%m-%d %H:%M:%S"), "now"),
            ("latency", f"{old.latency_ms} ms" if old.latency_ms is not None else "-", f"{new.latency_ms} ms"),
            (
                "tokens",
                _tokens(old.prompt_tokens, old.completion_tokens),
                _tokens(new.prompt_tokens, new.completion_tokens),
            ),
            ("attempts", str(old.attempts), str(new.attempts)),
            ("error", old.error or "-", new.error or "-"),
        ]
        width = max(len(r[1]) for r in rows) + 2
        self.stdout.write(f"Call {old.pk} ({old.judge_version}), sweep {old.sweep_id or '-'}")
        for label, before, after in rows:
            self.stdout.write(f"  {label:<9} {before:<{width}} {after}")

        self._per_turn(old, new.text)
        before_text, after_text = _pretty(old.raw_response), _pretty(new.text)
        self.stdout.write("\n--- archived response ---")
        self.stdout.write(old.raw_response or "(empty)")
        self.stdout.write("--- replay response ---")
        self.stdout.write(new.text or "(empty)")
        if before_text == after_text:
            self.stdout.write("\nSame response.")
            return
        self.stdout.write("\nResponses differ:")
        diff = difflib.unified_diff(
            before_text.splitlines(),
            after_text.splitlines(),
            fromfile=f"call {old.pk} (archived)",
            tofile="replay",
            lineterm="",
        )
        for line in diff:
            self.stdout.write(line)

    def _per_turn(self, old: JudgeCall, new_text: str) -> None:
        rows = per_turn_rows(old, new_text)
        if not rows:
            return
        width = max(len(before) for _, before, _ in rows) + 2
        self.stdout.write(f"\nPer turn ({len(rows)} rated):")
        self.stdout.write(f"  {'turn':<6} {'archived':<{width}} replay")
        for turn_id, before, after in rows:
            mark = "" if before == after else "  <- moved"
            self.stdout.write(f"  {turn_id:<6} {before:<{width}} {after}{mark}")
