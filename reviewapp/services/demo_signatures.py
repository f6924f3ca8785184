# Native punctuation (fullwidth question marks, ideographic commas) on purpose.
# ruff: noqa: RUF001
"""The demo's tier-1 signatures: the predictable share of a voice agent's turns, per demo language.

Greetings ("Harbor View Hotel reservations, this is Liam."), holds ("Ich prüfe das. Nennen Sie mir
bitte die Sendungsnummer.") and closings ("You're welcome. Have a good day.") are short, formulaic
and settle conciseness (3, concise) and speakability (pass) without an LLM call. Each pattern is a
whole-turn regular expression, so a long closing stacked with service formulas (a real
conciseness failure) is not matched. They are created through `signature_create`, with demo turns
as evidence, so each is measured against the demo's gold and refused if it contradicts it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..models import Dataset, Judge, Signature, Turn
from .signatures import SignatureError, signature_create

# Applied to the normalized (NFKC, casefolded) turn text. A "fr" rule covers "fr-CA".
PATTERNS: dict[str, dict[str, str]] = {
    "en": {
        "greeting": r"^[\w' ,-]{3,60}(, this is \w+|, \w+ speaking|, \w+ here)\.( (how can i help you( today)?|what can i do for you)\?)?$",
        "closing": r"^(you're welcome\. )?have a (good|great|nice) day\.?$",
    },
    "fr": {
        "greeting": r"^(bonjour, )?[\w' ,-]{3,60}(, \w+ (à l'appareil|à votre écoute|qui vous parle)(, bonjour)?|, \w+, bonjour)[.!]( (que puis-je faire pour vous|comment est-ce que je peux vous aider) ?\?)?$",
        "hold": r"^je (regarde|vais regarder)( ça)?( tout de suite)?\. [^.?!]{0,70} ?\?$",
        "closing": r"^((je vous en prie|bienvenue|très bien)[.!,] )?(ça me fait plaisir\. )?(bonne journée|bon voyage|à tout à l'heure)(, (monsieur|madame) \w+)?[.!]$",
    },
    "es": {
        "greeting": r"^[\w ,-]{3,60}, (le atiende \w+|soy \w+|\w+ al habla)\.( ¿en qué puedo ayudarle\?)?$",
        "closing": r"^(a usted\. )?hasta luego\.$",
    },
    "de": {
        "greeting": r"^[\w ,-]{3,60}(, sie sprechen mit \w+|, mein name ist \w+|, hier ist \w+|, \w+ am apparat|, \w+, (guten (tag|morgen|abend)|hallo))\.( (wie kann ich (ihnen )?helfen|worum geht es)\?)?$",
        "hold": r"^ich (schaue nach|prüfe das)\. [^.?!]{0,60}[.?]$",
        "closing": r"^(gerne\. )?(bis später|einen schönen tag noch)!$",
    },
    "it": {
        "greeting": r"^[\w ,-]{3,60}, sono \w+\.( come posso aiutarla\?)?$",
        "closing": r"^(di niente, )?buona (serata|giornata)\.$",
    },
    "hi": {
        "greeting": r"^[^.?!।]{3,60}, मैं [^.?!।,]{2,24}।( [^.?!।]{0,40}\?)?$",
    },
    "ja": {
        "greeting": r"^(お電話ありがとうございます。|はい、)?[^、。？?]{2,20}、([^、。？?]{1,12}、)?[^、。？?]{1,8}(でございます|です)。$",
        "closing": r"^(どういたしまして。)?(お気をつけてお過ごしください|お待ちしております)。$",
    },
    "ko": {
        "greeting": r"^(안녕하세요, )?[\w ]{2,25}입니다\.( 무엇을 도와드릴까요\?)?$",
    },
}

# What a predictable turn gets from each judge: concise (3) and speakable.
OUTCOMES: dict[str, dict] = {
    "conciseness": {"label": "concise", "rating": 3.0, "passed": True},
    "speakability": {"label": "", "rating": None, "passed": True},
}
EVIDENCE_PER_SIGNATURE = 2


@dataclass
class DemoSignatureSummary:
    created: int = 0
    kept: int = 0
    refused: list[str] | None = None


def demo_signatures_seed(*, dataset: Dataset) -> DemoSignatureSummary:
    """Create the demo signatures that do not exist yet, each with demo turns it matches as evidence."""
    from scoring.signatures import SignatureRule, find_match

    summary = DemoSignatureSummary(refused=[])
    turns = list(
        Turn.objects.filter(conversation__dataset=dataset, role=Turn.Role.AGENT)
        .select_related("conversation")
        .order_by("conversation_id", "position")
    )
    for slug, outcome in OUTCOMES.items():
        judge = Judge.objects.filter(slug=slug).first()
        if judge is None:
            continue
        for language, intents in PATTERNS.items():
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
                ][:EVIDENCE_PER_SIGNATURE]
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
