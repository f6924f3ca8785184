"""The languages Tribunal knows: those of the imported conversations, with each regional code's base
language (a reviewer's or an export's "fr" covers "fr-CA"). Forms offer these as a select."""

from reviewapp.models import Conversation


def known_languages() -> list[str]:
    """Every conversation language in the data and its base language, sorted (one query)."""
    codes = set(Conversation.objects.order_by().values_list("language", flat=True).distinct())
    codes |= {code.split("-", 1)[0] for code in codes}
    return sorted((code for code in codes if code), key=str.lower)


def language_choices(*, blank: str = "") -> list[tuple[str, str]]:
    """`known_languages` as form choices, after a blank choice when `blank` names one."""
    return ([("", blank)] if blank else []) + [(code, code) for code in known_languages()]
