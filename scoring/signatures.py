"""Tier 1: deterministic signatures that give a judge label without an LLM call.

A signature belongs to one judge and one language and matches a pattern:

* ``substring``: case-insensitive substring;
* ``stem``: every word of the pattern is a word prefix, matched from a word boundary
  ("refus" matches "refused", not "unrefusable"); unicode-aware. Languages written without spaces
  between words (ja, ko, zh) fall back to plain substring;
* ``regex``: a Python regular expression, case-insensitive.

A decline-type signature (intent ``decline`` or ``refusal``) must carry negation guards: phrases
that, found in the same sentence as the match, cancel it ("I would not say no to that" is not a
refusal). Guards are checked for every signature that has them.

Tier 1 never guesses: no unguarded match, or matches that give different outcomes, is ``None``
(unresolved) and the turn goes on to tier 2 or to people.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from scoring.errors import TribunalError
from scoring.records import record_dict

KINDS = ("substring", "stem", "regex")
DECLINE_INTENTS = frozenset({"decline", "refusal"})
NO_SPACE_LANGUAGES = frozenset({"ja", "ko", "zh"})

# Sentence ends: Latin and Devanagari punctuation, CJK full-width marks, line breaks.
_SENTENCE_END = re.compile(r"[.!?;\u0964\u0965\u3002\uff01\uff1f\uff1b]+|\n+")
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\uff07": "'"})


class SignatureError(TribunalError, ValueError):
    """A signature rule that cannot be used as written."""


@dataclass(frozen=True)
class SignatureRule:
    id: int | None
    judge: str
    language: str
    criterion: str
    intent: str
    kind: str
    pattern: str
    negation_guards: tuple[str, ...]
    label: str
    rating: float | None
    passed: bool | None

    @property
    def outcome(self) -> tuple[str, float | None, bool | None]:
        return (self.label, self.rating, self.passed)


@dataclass(frozen=True)
class SignatureMatch:
    rule: SignatureRule
    matched_text: str


def is_decline_type(intent: str) -> bool:
    return intent.strip().lower() in DECLINE_INTENTS


def base_language(language: str) -> str:
    return language.split("-", 1)[0].lower()


def normalize(text: str) -> str:
    """NFKC, unified apostrophes, casefolded: the form patterns and text are compared in."""
    return unicodedata.normalize("NFKC", text).translate(_APOSTROPHES).casefold()


def validate_rule(rule: SignatureRule) -> None:
    """Raise SignatureError naming the first problem with ``rule``."""
    if rule.kind not in KINDS:
        raise SignatureError(f"kind must be one of {', '.join(KINDS)}, not {rule.kind!r}")
    if not rule.pattern.strip():
        raise SignatureError("the pattern is empty")
    if not rule.language.strip():
        raise SignatureError("a signature needs a language")
    if not rule.intent.strip():
        raise SignatureError("a signature needs an intent (what the pattern detects)")
    if not rule.label.strip() and rule.rating is None and rule.passed is None:
        raise SignatureError("a signature must give a label, a rating or a pass/fail")
    if rule.kind == "regex":
        try:
            compiled = re.compile(rule.pattern, re.IGNORECASE)
        except re.error as exc:
            raise SignatureError(f"the regular expression does not compile: {exc}") from exc
        if compiled.search(""):
            raise SignatureError("the regular expression matches the empty string, so it matches every turn")
    guards = [g for g in rule.negation_guards if g.strip()]
    if len(guards) != len(rule.negation_guards):
        raise SignatureError("a negation guard is empty")
    if is_decline_type(rule.intent) and not guards:
        raise SignatureError(
            f"a {rule.intent.strip().lower()} signature needs negation guards "
            "(phrases such as 'would not say no' that cancel the match in the same sentence)"
        )


def _stem_regex(pattern: str) -> re.Pattern[str]:
    words = normalize(pattern).split()
    body = r"\s+".join(re.escape(word) + r"\w*" for word in words)
    return re.compile(r"(?<!\w)" + body)


def _matches(rule: SignatureRule, text: str, language: str) -> list[tuple[int, int]]:
    """Spans of ``rule`` in the normalized ``text``."""
    kind = rule.kind
    if kind == "stem" and base_language(language) in NO_SPACE_LANGUAGES:
        kind = "substring"
    if kind == "regex":
        regex = re.compile(rule.pattern, re.IGNORECASE)
        return [m.span() for m in regex.finditer(text) if m.end() > m.start()]
    if kind == "stem":
        return [m.span() for m in _stem_regex(rule.pattern).finditer(text)]
    needle = normalize(rule.pattern)
    spans, start = [], text.find(needle)
    while start != -1:
        spans.append((start, start + len(needle)))
        start = text.find(needle, start + 1)
    return spans


def _sentence_around(text: str, start: int, end: int) -> str:
    left = 0
    for boundary in _SENTENCE_END.finditer(text, 0, start):
        left = boundary.end()
    right_match = _SENTENCE_END.search(text, end)
    right = right_match.start() if right_match else len(text)
    return text[left:right]


def _guarded(rule: SignatureRule, text: str, span: tuple[int, int]) -> bool:
    if not rule.negation_guards:
        return False
    sentence = _sentence_around(text, *span)
    return any(normalize(guard) in sentence for guard in rule.negation_guards)


def applies_to(rule: SignatureRule, language: str) -> bool:
    """A rule in "fr" covers "fr" and "fr-CA"; a rule in "fr-CA" covers only "fr-CA"."""
    rule_language, language = rule.language.lower(), language.lower()
    return language == rule_language or language.startswith(rule_language + "-")


def find_match(rule: SignatureRule, text: str, language: str) -> SignatureMatch | None:
    """The first unguarded match of one rule, or None."""
    normalized = normalize(text)
    for span in _matches(rule, normalized, language):
        if not _guarded(rule, normalized, span):
            return SignatureMatch(rule=rule, matched_text=normalized[span[0] : span[1]])
    return None


def evaluate(rules: Sequence[SignatureRule], text: str, language: str) -> SignatureMatch | None:
    """The single confident outcome of ``rules`` on ``text``, or None (unresolved)."""
    found = []
    for rule in rules:
        if not applies_to(rule, language):
            continue
        match = find_match(rule, text, language)
        if match is not None:
            found.append(match)
    if not found:
        return None
    if len({m.rule.outcome for m in found}) > 1:
        return None
    return found[0]


# --- measuring a rule against gold -------------------------------------------------------------


@dataclass(frozen=True)
class GoldPrecision:
    """How often a rule's matches agree with gold: precision with n and a 95% Wilson interval."""

    agreeing: int
    compared: int
    low: float | None
    high: float | None

    @property
    def precision(self) -> float | None:
        return None if not self.compared else self.agreeing / self.compared

    def below_floor(self, *, floor: float, min_compared: int) -> bool:
        """True when there is enough gold to say the rule contradicts it: n >= min_compared, precision < floor."""
        precision = self.precision
        return precision is not None and self.compared >= min_compared and precision < floor

    def as_dict(self) -> dict[str, float | int | None]:
        return record_dict(self, "agreeing", "compared", "precision", "low", "high")


def gold_precision(*, agreeing: int, compared: int) -> GoldPrecision:
    if not 0 <= agreeing <= compared:
        raise ValueError(f"agreeing ({agreeing}) must be between 0 and compared ({compared})")
    if compared == 0:
        return GoldPrecision(agreeing=0, compared=0, low=None, high=None)
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(agreeing, compared, alpha=0.05, method="wilson")
    return GoldPrecision(agreeing=agreeing, compared=compared, low=float(low), high=float(high))
