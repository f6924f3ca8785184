"""Template filters that keep transcript text honest on screen.

`bidi` escapes the text, then shows every bidirectional control character as a visible marker
(`⟨U+202E⟩`) instead of letting it reorder what the reader sees (display spoofing).
"""

from __future__ import annotations

import re
import unicodedata

from django import template
from django.utils.html import conditional_escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

# Embeddings and overrides (U+202A-U+202E), isolates (U+2066-U+2069), marks (U+200E/F, U+061C).
BIDI_CONTROLS = re.compile("[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")


def _marker(match: re.Match[str]) -> str:
    char = match.group(0)
    code = f"U+{ord(char):04X}"
    return f'<span class="bidi" title="{unicodedata.name(char, code).title()}">\u27e8{code}\u27e9</span>'


def visible_bidi(text: object) -> SafeString:
    """`text` escaped, with each bidi control replaced by a visible, inert marker."""
    # mark_safe is sound here: conditional_escape has already escaped every character of the untrusted
    # text (transcript, comment, judge answer), and the only markup added is our own <span>, whose title is
    # a Unicode character name and whose content is a code point (A-Z, 0-9, "+"): nothing of the input.
    escaped = str(conditional_escape(text))
    return mark_safe(BIDI_CONTROLS.sub(_marker, escaped))  # noqa: S308 (escaped above; see the comment)


@register.filter(name="bidi")
def bidi(value: object) -> SafeString:
    return visible_bidi("" if value is None else value)
