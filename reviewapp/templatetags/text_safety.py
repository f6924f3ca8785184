"""Template filters that keep transcript text honest on screen.

`bidi` escapes the text, then shows every bidirectional control character as a visible marker
(`⟨U+202E⟩`) instead of letting it reorder what the reader sees (display spoofing).
"""

from __future__ import annotations

import re
import unicodedata

from django import template
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

register = template.Library()

# Embeddings and overrides (U+202A-U+202E), isolates (U+2066-U+2069), marks (U+200E/F, U+061C). The group
# keeps each control in split()'s result, between the pieces of text around it.
BIDI_CONTROLS = re.compile("([\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c])")


def _marker(char: str) -> SafeString:
    code = f"U+{ord(char):04X}"
    return format_html(
        '<span class="bidi" title="{}">\u27e8{}\u27e9</span>', unicodedata.name(char, code).title(), code
    )


def visible_bidi(text: object) -> SafeString:
    """`text` escaped, with each bidi control replaced by a visible, inert marker.

    Nothing is marked safe by hand: format_html_join escapes every piece of the untrusted text (transcript,
    comment, judge answer) and keeps only the markers, which format_html built from a character's name
    and code point."""
    pieces = BIDI_CONTROLS.split(str(text))  # text, control, text, control, ..., text
    return format_html_join("", "{}", ((_marker(piece) if i % 2 else piece,) for i, piece in enumerate(pieces)))


@register.filter(name="bidi")
def bidi(value: object) -> SafeString:
    return visible_bidi("" if value is None else value)
