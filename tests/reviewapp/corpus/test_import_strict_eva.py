"""EVA's input refused whole, like Tribunal's (tests/reviewapp/corpus/test_import_strict.py): validation
sets and run folders whose bad record is named by file, line and field, with nothing written."""

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.reviewapp.corpus.strict_support import LONG, refused
from tests.reviewapp.corpus.test_import_eva_run import RECORD
from tests.reviewapp.corpus.test_import_eva_validation import CONCISENESS

pytestmark = pytest.mark.django_db


# --- EVA validation sets ------------------------------------------------------------------------------


def _conv_turns(**overrides) -> str:
    record = {
        "conversation_id": "bad",
        "conv_turns": [
            {"position": 1, "role": "user", "content": "hi"},
            {"position": 2, "role": "agent", "content": "hello", "expected_rating": 3, "failure_modes": []},
        ],
    }
    record.update(overrides)
    return json.dumps(record)


EVA_VALIDATION_CASES = {
    "nan rating": (
        _conv_turns().replace('"expected_rating": 3', '"expected_rating": NaN'),
        "conv_turns[1].expected_rating",
        "NaN is not a JSON number",
    ),
    "duplicate key": (
        _conv_turns().replace('"expected_rating": 3', '"expected_rating": 3, "expected_rating": 1'),
        "conv_turns[1]",
        "'expected_rating' appears twice",
    ),
    "conversation_id 201": (_conv_turns(conversation_id=LONG), "conversation_id", "201 characters long"),
    "language markup": (_conv_turns(language='"><svg onload=alert(1)>'), "language", "BCP 47"),
    "position 2^31": (
        _conv_turns().replace('"position": 1', '"position": 2147483648'),
        "conv_turns[0].position",
        "0-2147483647",
    ),
    "nul in content": (_conv_turns().replace('"hi"', '"h\\u0000i"'), "conv_turns[0].content", "NUL character"),
}


@pytest.mark.parametrize("case", list(EVA_VALIDATION_CASES))
def test_eva_validation_bad_input_is_refused_with_file_line_and_field(tmp_path, case):
    line, field, message = EVA_VALIDATION_CASES[case]
    path = tmp_path / "conciseness.jsonl"
    good = CONCISENESS.read_text(encoding="utf-8").splitlines()[0]
    path.write_text(good + "\n" + line + "\n", encoding="utf-8")

    error = refused(path, fmt="eva-validation")

    assert (error["file"], error["line"], error["field"]) == ("conciseness.jsonl", 2, field)
    assert message in error["message"]


def test_eva_validation_file_named_for_a_too_long_slug_is_refused(tmp_path):
    path = tmp_path / ("j" * 101 + ".jsonl")
    shutil.copyfile(CONCISENESS, path)
    error = refused(path, fmt="eva-validation")
    assert error["field"] == "(file name)" and "more than the 100" in error["message"]


# --- EVA run folders ----------------------------------------------------------------------------------


@pytest.fixture
def run_folder(tmp_path) -> Path:
    records = tmp_path / "run" / "records"
    shutil.copytree(RECORD, records / "1.1.2")
    shutil.copytree(RECORD, records / "1.1.3")
    return tmp_path / "run"


def _edit_json(path: Path, change) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def test_eva_run_symlinked_file_is_refused_and_not_followed(run_folder, tmp_path):
    outside = tmp_path / "secret.json"
    outside.write_text('{"record_id": "stolen"}', encoding="utf-8")
    target = run_folder / "records" / "1.1.3" / "result.json"
    target.unlink()
    os.symlink(outside, target)

    error = refused(run_folder)

    assert error["file"] == "records/1.1.3/result.json" and error["field"] == "(file)"
    assert "symbolic link" in error["message"]


def test_eva_run_symlinked_record_folder_is_refused(run_folder, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(RECORD, elsewhere)
    os.symlink(elsewhere, run_folder / "records" / "9.9.9")

    error = refused(run_folder)

    assert error["file"] == "records/9.9.9" and "symbolic link" in error["message"]


def test_eva_run_folder_given_as_a_symlink_is_refused(run_folder, tmp_path):
    link = tmp_path / "link"
    os.symlink(run_folder, link)
    error = refused(link)
    assert error["field"] == "PATH" and "symbolic link" in error["message"]


def test_eva_run_result_with_nan_names_the_file_and_field(run_folder):
    result = run_folder / "records" / "1.1.3" / "result.json"
    result.write_text(result.read_text(encoding="utf-8").replace("{", '{"score": NaN, ', 1), encoding="utf-8")

    error = refused(run_folder)

    assert (error["file"], error["field"]) == ("records/1.1.3/result.json", "score")
    assert "NaN is not a JSON number" in error["message"]


def test_eva_run_record_id_over_the_column_is_refused(run_folder):
    _edit_json(run_folder / "records" / "1.1.3" / "result.json", lambda d: d.update(record_id=LONG))
    error = refused(run_folder)
    assert (error["file"], error["field"]) == ("records/1.1.3/result.json", "record_id")
    assert "201 characters long" in error["message"]


def test_eva_run_language_is_validated(run_folder):
    _edit_json(run_folder / "records" / "1.1.3" / "result.json", lambda d: d.update(language="<script>"))
    error = refused(run_folder)
    assert (error["file"], error["field"]) == ("records/1.1.3/result.json", "language")


def test_eva_run_time_beyond_the_column_is_refused(run_folder):
    context = run_folder / "records" / "1.1.3" / "expected_processor_context.json"

    def push_time(data):
        turns = data["audio_timestamps_user_turns"]
        key = next(iter(turns))
        turns[key] = [[9.3e18, 9.3e18 + 1]]

    _edit_json(context, push_time)
    error = refused(run_folder)
    assert error["file"] == "records/1.1.3/expected_processor_context.json"
    assert error["field"].startswith("audio_timestamps_user_turns.")
    assert "outside 0-2147483647 ms" in error["message"]


def test_eva_run_utf16_file_is_refused_with_a_line(run_folder):
    result = run_folder / "records" / "1.1.3" / "result.json"
    result.write_bytes(result.read_text(encoding="utf-8").encode("utf-16"))
    error = refused(run_folder)
    assert (error["file"], error["line"]) == ("records/1.1.3/result.json", 1)
    assert "UTF-16" in error["message"]
