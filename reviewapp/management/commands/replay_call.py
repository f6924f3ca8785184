"""Send an archived judge call again and show the archived and the new answer side by side."""

from __future__ import annotations

import difflib
import json

from django.core.management.base import BaseCommand, CommandError

from reviewapp.models import JudgeCall
from reviewapp.services import calls


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
