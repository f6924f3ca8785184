"""Hostile and broken input is refused whole: the message names file, line and field, nothing is written.

One parametrised test per importer (Tribunal JSONL, Tribunal CSV, EVA validation sets, EVA run
folders) and one for judge specs; each case is a file with a good record before the bad one, so a
partial write would show up in the row counts.
"""

import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from reviewapp.corpus.importers import limits
from reviewapp.corpus.services.imports import ImportFailed, dataset_import
from reviewapp.models import Conversation, Dataset, GoldLabel, Judge, JudgeVersion, Turn, Verdict
from tests.reviewapp.corpus.strict_support import LONG, refused
from tests.reviewapp.corpus.test_import_eva_validation import CONCISENESS

pytestmark = pytest.mark.django_db

# --- Tribunal JSONL ---------------------------------------------------------------------------------

GOOD_JSONL = '{"external_id": "good", "turns": [{"role": "user", "text": "hi"}, {"role": "agent", "text": "hello"}]}'


def _turn_record(turn: str, **record: str) -> str:
    head = ", ".join(f'"{key}": {value}' for key, value in record.items())
    return '{"external_id": "bad", ' + (head + ", " if head else "") + '"turns": [' + turn + "]}"


def _label(body: str) -> str:
    return _turn_record('{"role": "agent", "text": "x", "labels": [{"judge": "conciseness", ' + body + "}]}")


def _verdict(body: str) -> str:
    return _turn_record('{"role": "agent", "text": "x", "verdicts": [{"judge": "conciseness", ' + body + "}]}")


JSONL_CASES = {
    "nan gold rating": (_label('"rating": NaN'), "turns[0].labels[0].rating", "NaN is not a JSON number"),
    "infinite verdict rating": (
        _verdict('"rating": Infinity'),
        "turns[0].verdicts[0].rating",
        "Infinity is not a JSON number",
    ),
    "minus infinity": (_label('"rating": -Infinity'), "turns[0].labels[0].rating", "-Infinity is not a JSON number"),
    "float overflow": (_label('"rating": 1e400'), "turns[0].labels[0].rating", "too large for a number"),
    "duplicate key": (_label('"rating": 1, "rating": 3'), "turns[0].labels[0]", "'rating' appears twice"),
    "external_id 201": (
        '{"external_id": "' + LONG + '", "turns": [{"role": "user", "text": "x"}]}',
        "external_id",
        "201 characters long, more than the 200",
    ),
    "language too long": (
        _turn_record('{"role": "user", "text": "x"}', language=json.dumps("en-" + "a" * 40)),
        "language",
        "more than the 35",
    ),
    "language markup": (
        _turn_record('{"role": "user", "text": "x"}', language=json.dumps('"><svg onload=alert(1)>')),
        "language",
        "expected a BCP 47 language code",
    ),
    "label 101": (_label(f'"label": "{"y" * 101}"'), "turns[0].labels[0].label", "101 characters long"),
    "judge slug 101": (
        _turn_record(f'{{"role": "agent", "text": "x", "labels": [{{"judge": "{"j" * 101}", "rating": 1}}]}}'),
        "turns[0].labels[0].judge",
        "101 characters long, more than the 100",
    ),
    "judge slug markup": (
        _turn_record('{"role": "agent", "text": "x", "labels": [{"judge": "<b>x</b>", "rating": 1}]}'),
        "turns[0].labels[0].judge",
        "expected a judge slug",
    ),
    "version 65": (_verdict(f'"version": "{"v" * 65}", "rating": 1'), "turns[0].verdicts[0].version", "65 characters"),
    "position 2^31": (
        _turn_record('{"position": 2147483648, "role": "user", "text": "x"}'),
        "turns[0].position",
        "expected an integer 0-2147483647",
    ),
    "time 2^63": (
        _turn_record('{"role": "user", "text": "x", "audio_start_ms": 9223372036854775808}'),
        "turns[0].audio_start_ms",
        "expected an integer 0-2147483647",
    ),
    "5000-digit integer": (
        _turn_record('{"position": 1' + "0" * 5000 + ', "role": "user", "text": "x"}'),
        "turns[0].position",
        "an integer of 5001 digits is too long",
    ),
    "escaped nul": (_turn_record('{"role": "user", "text": "a\\u0000b"}'), "turns[0].text", "NUL character"),
    "lone surrogate": (_turn_record('{"role": "user", "text": "a\\ud800b"}'), "turns[0].text", "lone UTF-16 surrogate"),
    "deep nesting": (
        _turn_record('{"role": "user", "text": "x"}', metadata='{"a": ' * 100 + "1" + "}" * 100),
        "metadata.a.a.a...",
        "nested deeper than 64 levels",
    ),
    "very deep nesting": (
        _turn_record('{"role": "user", "text": "x"}', metadata="[" * 100_000 + "]" * 100_000),
        "(line)",
        "nested deeper than 64 levels",
    ),
    "non-finite string rating": (_label('"rating": "nan"'), "turns[0].labels[0].rating", "expected a finite number"),
}


@pytest.mark.parametrize("case", list(JSONL_CASES))
def test_jsonl_bad_input_is_refused_with_file_line_and_field(tmp_path, case):
    line, field, message = JSONL_CASES[case]
    path = tmp_path / "calls.jsonl"
    path.write_text(GOOD_JSONL + "\n" + line + "\n", encoding="utf-8")

    error = refused(path)

    assert (error["file"], error["line"]) == ("calls.jsonl", 2)
    assert error["field"] == field or (field.endswith("...") and error["field"].startswith(field[:-3]))
    assert message in error["message"]
    assert f"calls.jsonl line 2 field {error['field']}: {error['message']}" in _summary_message(path)


def _summary_message(path: Path) -> str:
    try:
        dataset_import(path=path, fmt="auto")
    except ImportFailed as failure:
        return str(failure)
    raise AssertionError("the import was not refused")


ENCODING_CASES = {
    "raw nul byte": (
        GOOD_JSONL.encode() + b"\n" + GOOD_JSONL.replace("good", "b\x00d").encode() + b"\n",
        2,
        "NUL byte",
    ),
    "latin-1 byte": (
        GOOD_JSONL.encode() + b"\n" + GOOD_JSONL.replace("hello", "caf\xe9").encode("latin-1") + b"\n",
        2,
        "not UTF-8: byte 0xe9",
    ),
    "utf-16 with bom": ((GOOD_JSONL + "\n").encode("utf-16"), 1, "UTF-16 (little-endian) (byte order mark)"),
    "utf-16 without bom": ((GOOD_JSONL + "\n").encode("utf-16-le"), 1, "looks like UTF-16"),
    "utf-32": ((GOOD_JSONL + "\n").encode("utf-32"), 1, "UTF-32"),
}


@pytest.mark.parametrize("case", list(ENCODING_CASES))
@pytest.mark.parametrize("fmt", ["jsonl", "csv", "eva-validation"])
def test_encodings_other_than_utf8_are_refused_with_a_line(tmp_path, case, fmt):
    data, line, message = ENCODING_CASES[case]
    name = {"jsonl": "calls.jsonl", "csv": "turns.csv", "eva-validation": "conciseness.jsonl"}[fmt]
    if fmt == "csv":
        text_rows = ["conversation_id,role,text", "good,user,hello"]
        bad = {"raw nul byte": "b\x00d,user,x", "latin-1 byte": "bad,user,caf\xe9"}
        if case in bad:
            data = ("\n".join(text_rows) + "\n").encode() + bad[case].encode("latin-1") + b"\n"
            line = 3
        else:
            data = ("\n".join(text_rows) + "\n").encode(data_encoding(case))
    if fmt == "eva-validation":
        good = CONCISENESS.read_text(encoding="utf-8").splitlines()[0]
        data = data.replace(GOOD_JSONL.encode(), good.encode())
        if line == 1:
            data = (good + "\n").encode(data_encoding(case))
    path = tmp_path / name
    path.write_bytes(data)

    error = refused(path, fmt=fmt)

    assert (error["file"], error["line"]) == (name, line)
    assert message in error["message"]


def data_encoding(case: str) -> str:
    return {"utf-16 with bom": "utf-16", "utf-16 without bom": "utf-16-le", "utf-32": "utf-32"}[case]


def test_a_utf8_byte_order_mark_is_read_not_refused(tmp_path):
    path = tmp_path / "calls.jsonl"
    path.write_bytes(b"\xef\xbb\xbf" + GOOD_JSONL.encode() + b"\n")
    assert dataset_import(path=path, fmt="auto").conversations == 1


# --- Tribunal CSV -----------------------------------------------------------------------------------

CSV_HEADER = "conversation_id,language,position,role,text,judge,gold_rating,gold_label,judge_version,verdict_rating"
CSV_GOOD = "good,en,0,agent,hello,conciseness,3,,,"

CSV_CASES = {
    "language markup": ('bad,"""><svg onload=alert(1)>",0,agent,x,,,,,', 3, "language", "BCP 47"),
    "conversation_id 201": (f"{LONG},en,0,agent,x,,,,,", 3, "conversation_id", "201 characters long"),
    "nan gold rating": ("bad,en,0,agent,x,conciseness,nan,,,", 3, "gold_rating", "expected a finite number"),
    "infinite verdict": ("bad,en,0,agent,x,conciseness,,,v1,inf", 3, "verdict_rating", "expected a finite number"),
    "overflowing rating": ("bad,en,0,agent,x,conciseness,1e999,,,", 3, "gold_rating", "expected a finite number"),
    "position 2^31": ("bad,en,2147483648,agent,x,,,,,", 3, "position", "0-2147483647"),
    "gold label 101": (f"bad,en,0,agent,x,conciseness,,{'y' * 101},,", 3, "gold_label", "101 characters long"),
    "judge slug 101": (f"bad,en,0,agent,x,{'j' * 101},3,,,", 3, "judge", "more than the 100"),
    "version 65": (f"bad,en,0,agent,x,conciseness,,,{'v' * 65},2", 3, "judge_version", "65 characters long"),
    "extra field": ("bad,en,0,agent,x,,,,,,surplus", 3, "(row)", "the row has 11 fields, the header 10"),
    "missing field": ("bad,en,0,agent", 3, "(row)", "the row has 4 fields, the header 10"),
    "stray quote": ('bad,en,0,agent,"x"y,,,,,', 3, "(row)", "malformed CSV"),
    "nul byte": ("bad,en,0,agent,a\x00b,,,,,", 3, "(line)", "NUL byte"),
}


@pytest.mark.parametrize("case", list(CSV_CASES))
def test_csv_bad_input_is_refused_with_file_line_and_field(tmp_path, case):
    row, line, field, message = CSV_CASES[case]
    path = tmp_path / "turns.csv"
    path.write_text(f"{CSV_HEADER}\n{CSV_GOOD}\n{row}\n", encoding="utf-8")

    error = refused(path)

    assert (error["file"], error["line"], error["field"]) == ("turns.csv", line, field)
    assert message in error["message"]


def test_csv_json_cell_is_strict_json(tmp_path):
    path = tmp_path / "turns.csv"
    path.write_text(f'{CSV_HEADER},entities\n{CSV_GOOD},\nbad,en,0,agent,x,,,,,,"[1, NaN]"\n', encoding="utf-8")

    error = refused(path)

    assert (error["line"], error["field"]) == (3, "entities[1]")
    assert "NaN is not a JSON number" in error["message"]


def test_csv_unclosed_quote_does_not_swallow_the_rest_of_the_file(tmp_path):
    rows = [CSV_HEADER, CSV_GOOD, 'c2,en,0,agent,"an open quote,,,,,']
    rows += [f"c{n},en,0,agent,turn {n},,,,," for n in range(3, 40)]
    path = tmp_path / "turns.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")

    error = refused(path)

    assert (error["file"], error["line"], error["field"]) == ("turns.csv", 3, "text")
    assert "a quoted field is never closed" in error["message"]


def test_csv_quote_closed_rows_later_is_refused_by_the_line_break_rule(tmp_path):
    # The quote opened in `language` closes on a later line: the field count matches by chance.
    rows = [CSV_HEADER, CSV_GOOD, 'c2,"en,0,agent,x,,,,,', 'c3",en,0,agent,y,,,,']
    path = tmp_path / "turns.csv"
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")

    error = refused(path)

    assert (error["line"], error["field"]) == (3, "language")
    assert "line break" in error["message"]


def test_csv_field_over_the_limit_is_a_clear_error(tmp_path):
    path = tmp_path / "turns.csv"
    path.write_text(f"{CSV_HEADER}\n{CSV_GOOD}\nbig,en,0,agent,{'z' * 131_073},,,,,\n", encoding="utf-8")

    error = refused(path)

    assert (error["file"], error["line"], error["field"]) == ("turns.csv", 3, "(row)")
    assert "longer than 131,072 characters" in error["message"]


def test_csv_multiline_text_in_quotes_is_still_accepted(tmp_path):
    path = tmp_path / "turns.csv"
    path.write_text(f'{CSV_HEADER}\nc1,en,0,agent,"two\nlines",,,,,\nc1,en,1,user,ok,,,,,\n', encoding="utf-8")
    summary = dataset_import(path=path, fmt="auto")
    assert summary.turns == 2
    assert Turn.objects.get(position=0).text == "two\nlines"


# --- the rest ---------------------------------------------------------------------------------------


def test_language_option_and_dataset_name_are_checked(tmp_path):
    path = tmp_path / "calls.jsonl"
    path.write_text(GOOD_JSONL + "\n", encoding="utf-8")
    assert refused(path, language="fr_FR")["field"] == "--language"
    assert refused(path, dataset_name="d" * 201)["field"] == "--dataset"


@pytest.mark.parametrize(
    ("code", "accepted"),
    [
        ("en", True),
        ("fr-CA", True),
        ("zh-Hant-TW", True),
        ("es-419", True),
        ("de-CH-1901", True),
        ("sl-rozaj-biske", True),
        ("hi", True),
        ("", False),
        ("fr_FR", False),
        ("e", False),
        ("english", False),
        ("en-", False),
        ('"><svg onload=alert(1)>', False),
        ("en CA", False),
    ],
)
def test_language_codes(code, accepted):
    assert (limits.language_problem(code) == "") is accepted


def test_the_published_schema_states_the_same_limits():
    schema = json.loads(
        (Path(__file__).resolve().parents[3] / "docs/schemas/tribunal-conversation.schema.json").read_text()
    )
    assert schema["properties"]["external_id"]["maxLength"] == limits.LIMITS["external_id"]
    assert schema["properties"]["language"]["maxLength"] == limits.LIMITS["language"]
    assert schema["properties"]["language"]["pattern"] == limits.BCP47.pattern
    assert schema["$defs"]["turn"]["properties"]["position"]["maximum"] == limits.INT32_MAX
    assert schema["$defs"]["verdict"]["properties"]["version"]["maxLength"] == limits.LIMITS["version"]
    for name in ("label", "verdict"):
        assert schema["$defs"][name]["properties"]["judge"]["maxLength"] == limits.LIMITS["judge"]
        assert schema["$defs"][name]["properties"]["label"]["maxLength"] == limits.LIMITS["label"]


def test_column_limits_match_the_models():
    assert {
        "dataset_name": Dataset._meta.get_field("name").max_length,
        "external_id": Conversation._meta.get_field("external_id").max_length,
        "language": Conversation._meta.get_field("language").max_length,
        "label": GoldLabel._meta.get_field("label").max_length,
        "judge": Judge._meta.get_field("slug").max_length,
        "version": JudgeVersion._meta.get_field("version").max_length,
    } == limits.LIMITS
    assert Verdict._meta.get_field("label").max_length == limits.LIMITS["label"]
    # PositiveIntegerField / IntegerField on PostgreSQL: 32-bit.
    assert Turn._meta.get_field("position").get_internal_type() == "PositiveIntegerField"
    assert Turn._meta.get_field("audio_start_ms").get_internal_type() == "IntegerField"
    assert limits.INT32_MAX == 2_147_483_647


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"slug": "s" * 101}, "field slug: is 101 characters long"),
        ({"version": "v" * 65}, "field version: is 65 characters long"),
    ],
)
def test_load_judges_refuses_slug_or_version_over_their_columns(tmp_path, change, message):
    text = (Path(__file__).resolve().parents[3] / "judges" / "conciseness.yaml").read_text(encoding="utf-8")
    for key, value in change.items():
        text = "\n".join(f'{key}: "{value}"' if line.startswith(f"{key}:") else line for line in text.splitlines())
    path = tmp_path / "long.yaml"
    path.write_text(text + "\n", encoding="utf-8")

    with pytest.raises(CommandError) as caught:
        call_command("load_judges", str(path))

    assert message in str(caught.value)
    assert JudgeVersion.objects.count() == 0 and Judge.objects.count() == 0
