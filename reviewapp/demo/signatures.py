"""The demo's tier-1 signatures, from demo/signatures.yaml: the predictable share of a voice agent's turns.

Greetings, holds and closings are short, formulaic and settle conciseness (3, concise) and speakability
(pass) without an LLM call. Each pattern is a whole-turn regular expression, so a long closing stacked
with service formulas (a real conciseness failure) is not matched. They are created through
`signature_create`, with demo turns they match as evidence, so each is measured against the demo's gold
and refused if it contradicts it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from reviewapp.judging.services.signatures import SignatureError, signature_create
from reviewapp.models import Dataset, Judge, Signature, Turn


@dataclass
class DemoSignatureSummary:
    created: int = 0
    kept: int = 0
    refused: list[str] | None = None


def demo_signatures_seed(*, dataset: Dataset, spec: dict[str, Any]) -> DemoSignatureSummary:
    """Create the signatures of `spec` (demo/signatures.yaml) that do not exist yet, with matching turns as evidence."""
    from scoring.signatures import SignatureRule, find_match

    summary = DemoSignatureSummary(refused=[])
    turns = list(
        Turn.objects.filter(conversation__dataset=dataset, role=Turn.Role.AGENT)
        .select_related("conversation")
        .order_by("conversation_id", "position")
    )
    for slug, outcome in spec["outcomes"].items():
        judge = Judge.objects.filter(slug=slug).first()
        if judge is None:
            continue
        for language, intents in spec["patterns"].items():
            for intent, pattern in intents.items():
                existing = Signature.objects.filter(judge=judge, language=language, intent=intent, pattern=pattern)
                if existing.filter(evidence__isnull=False).exists():
                    summary.kept += 1
                    continue
                existing.delete()  # left without evidence by a demo reset: made again below
                rule = SignatureRule(
                    id=None,
                    judge=slug,
                    language=language,
                    criterion="",
                    intent=intent,
                    kind="regex",
                    pattern=pattern,
                    negation_guards=(),
                    **outcome,
                )
                base = language.split("-", 1)[0]
                evidence = [
                    t
                    for t in turns
                    if t.conversation.language.split("-", 1)[0].lower() == base
                    and find_match(rule, t.text, t.conversation.language) is not None
                ][: spec["evidence_per_signature"]]
                try:
                    signature_create(
                        judge=judge,
                        language=language,
                        intent=intent,
                        kind="regex",
                        pattern=pattern,
                        evidence=evidence,
                        **outcome,
                    )
                except SignatureError as exc:
                    summary.refused.append(f"{slug}/{language}/{intent}: {exc}")
                else:
                    summary.created += 1
    return summary
