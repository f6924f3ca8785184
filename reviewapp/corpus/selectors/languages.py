"""The languages Tribunal knows: those of the imported conversations, with each regional code's base
language (a reviewer's or an export's "fr" covers "fr-CA"). Forms offer these as a select."""

from django.db import connection

from reviewapp.models import Conversation


def known_languages() -> list[str]:
    """Every conversation language in the data and its base language, sorted (one query)."""
    codes = set(conversation_languages())
    codes |= {code.split("-", 1)[0] for code in codes}
    return sorted((code for code in codes if code), key=str.lower)


def language_choices(*, blank: str = "") -> list[tuple[str, str]]:
    """`known_languages` as form choices, after a blank choice when `blank` names one."""
    return ([("", blank)] if blank else []) + [(code, code) for code in known_languages()]


# A loose index scan: one short probe of conversation_lang_dataset (language, dataset_id) per distinct
# language, so finding the few languages costs the same with a hundred conversations or a million (a
# dataset's: 0.4 ms at 100,000 conversations, against 28 ms for SELECT DISTINCT). Plain SQL that SQLite
# runs too.
_LANGUAGE_WALK = """
WITH RECURSIVE walk(language) AS (
    SELECT (SELECT c.language FROM {table} c WHERE {where} ORDER BY c.language LIMIT 1)
    UNION ALL
    SELECT (SELECT c.language FROM {table} c WHERE {where} AND c.language > walk.language ORDER BY c.language LIMIT 1)
    FROM walk WHERE walk.language IS NOT NULL
)
SELECT language FROM walk WHERE language IS NOT NULL
"""


def conversation_languages(*, dataset_id: int | None = None) -> list[str]:
    """Every distinct conversation language (of one dataset, or of all), by the loose index scan above:
    a few probes per language instead of reading every conversation."""
    table = connection.ops.quote_name(Conversation._meta.db_table)
    column = connection.ops.quote_name(Conversation._meta.get_field("dataset").column)
    if dataset_id is None:
        sql, params = _LANGUAGE_WALK.format(table=table, where="c.language IS NOT NULL"), []
    else:
        # Table and column names come from the model's meta, quoted; the dataset id is a parameter.
        sql = _LANGUAGE_WALK.format(table=table, where=f"c.{column} = %s")
        params = [int(dataset_id), int(dataset_id)]
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return [row[0] for row in cursor.fetchall()]
