"""Hedges: an explanation in which the judge says it is not sure of its own answer.

The rule (from the rubric generator's judge setup): an answer that is ambiguous or comments on its
own uncertainty goes to people, never to a score. `hedge_in` finds such a comment in a judge's
explanation and returns the words that matched; scoring/parsing.py then makes the answer
unresolved with the code ``hedged``.

What counts, per language (all lists are tried on every explanation: judges often explain in English
whatever the conversation's language):
* the judge in the first person saying it is unsure or cannot tell ("I'm not sure", "I can't tell",
  "je ne suis pas sûr", "je ne sais pas");
* a sentence that starts with "not sure" / "pas sûr";
* "hard/difficult to say/tell" ("difficile à dire", "difficile de trancher");
* two ratings offered at once ("could be 2 or 3", "either 2 or 3", "somewhere between 2 and 3",
  "soit 2 soit 3", "pourrait être 2 ou 3");
* a rating with maybe/perhaps ("maybe 2?", "perhaps a 3.", "peut-être 2 ?").
A number counts as a rating only when it stands alone (followed by punctuation, the end, "/3" or
"out of"): "maybe 2 sentences would do" is advice, not a hedge.

What does not: words the judge quotes from the conversation (text inside quotes is removed first,
so `the agent said "I'm not sure"` is not a hedge), and the third person ("the user is not sure").
The lists are short on purpose: a pattern here sends an answer to people, so each one must mean the
judge doubts its own rating.
"""

from __future__ import annotations

import re

_N = r"(?:a |an |un |une )?\d+(?:[.,]\d+)?"  # a rating: "2", "a 3", "2.5", "un 2"
# ...standing alone: "maybe 2?" is a rating, "maybe 2 sentences" is not.
_END = r"(?=\s*(?:[?.!,;:)]|$|/\d|out of|sur \d))"

HEDGE_PATTERNS: dict[str, tuple[str, ...]] = {
    "en": (
        r"\bI(?:'m| am) (?:not (?:entirely |really |totally |quite |fully |100% )?(?:sure|certain)|unsure|uncertain)\b",
        r"\bI(?: really)? (?:can(?:not|'t| not)|could(?:n't| not)) (?:really )?(?:tell|decide|say|be sure)\b",
        r"\bI(?: really)? (?:don't|do not) know\b",
        r"(?:^|[.!?;:]\s+)not (?:entirely |really |quite )?(?:sure|certain)\b",
        r"\b(?:hard|difficult|tough|impossible) to (?:say|tell|decide|judge)\b",
        rf"\b(?:could|might|may|would) be (?:either )?{_N} or {_N}{_END}",
        rf"\beither {_N} or {_N}{_END}",
        rf"\b(?:somewhere|torn) between {_N} and {_N}{_END}",
        rf"\b(?:maybe|perhaps|possibly) {_N}{_END}",
        rf"\b{_N} or (?:maybe|perhaps|possibly) {_N}{_END}",
    ),
    "fr": (
        r"\bje ne suis pas (?:vraiment |tout à fait |totalement |très )?(?:sûr|sûre|sur|certain|certaine)\b",
        r"\bje (?:ne )?sais pas\b",
        r"\bje (?:ne )?peux pas (?:dire|trancher|décider|être sûr)\b",
        r"\bj'hésite\b",
        r"(?:^|[.!?;:]\s+)pas (?:vraiment |très )?(?:sûr|sûre|certain|certaine)\b",
        r"\b(?:difficile|dur) (?:à dire|de (?:dire|trancher|décider|juger))\b",
        rf"\bsoit {_N},? soit {_N}{_END}",
        rf"\b(?:pourrait|peut) être {_N} ou {_N}{_END}",
        rf"\b(?:peut-être|peut être|possiblement) {_N}{_END}",
    ),
}

# Quoted spans: what the conversation said, not what the judge thinks.
# Curly apostrophes and single quotes are read as ASCII ones first.
_APOSTROPHES = str.maketrans({"\u2018": "'", "\u2019": "'"})
_QUOTED = re.compile(
    r'"[^"]*"|\u201c[^\u201d]*\u201d|«[^»]*»|\u201e[^\u201c\u201d]*[\u201c\u201d]|(?<![\w])\'[^\']*\'(?![\w])'
)
_COMPILED = {
    language: tuple(re.compile(pattern, re.IGNORECASE) for pattern in patterns)
    for language, patterns in HEDGE_PATTERNS.items()
}


def hedge_in(explanation: str) -> str:
    """The words of the first hedge in `explanation` (outside quotes), or "" when it does not hedge."""
    if not explanation:
        return ""
    text = _QUOTED.sub(" ", explanation.translate(_APOSTROPHES))
    for patterns in _COMPILED.values():
        for pattern in patterns:
            match = pattern.search(text)
            if match is not None:
                return match.group().strip(" .!?;:")
    return ""
