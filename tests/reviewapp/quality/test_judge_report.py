"""judge_report: the judge quality numbers on the command line, as text or JSON."""

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from sklearn.metrics import accuracy_score, cohen_kappa_score, f1_score

from tests import factories

pytestmark = pytest.mark.django_db

GOLD = [True, False, True, True, False, True, False, True]
V1 = [True, True, True, False, False, True, False, True]
V2 = [True, False, True, True, False, True, True, True]


@pytest.fixture
def judge():
    judge = factories.binary_judge()
    fr, ja = factories.agent_turns("fr-calls", 4), factories.agent_turns("ja-calls", 4, language="ja")
    turns = fr + ja
    factories.verdicts(factories.sweep_for(turns), factories.version(judge, "v1"), turns, V1)
    factories.verdicts(factories.sweep_for(turns), factories.version(judge, "v2"), turns, V2)
    factories.gold(judge, turns, GOLD)
    return judge


def report(*args) -> dict:
    out = StringIO()
    call_command("judge_report", "--judge", "speakability", "--json", "--bootstrap", "200", *args, stdout=out)
    return json.loads(out.getvalue())


def labels(values):
    return ["pass" if v else "fail" for v in values]


def test_json_has_n_accuracy_macro_f1_kappa_with_intervals(judge):
    result = report("--version", "v1")
    assert result["version"] == "v1" and result["n"] == 8
    assert result["accuracy"]["value"] == pytest.approx(accuracy_score(labels(GOLD), labels(V1)), abs=1e-4)
    assert result["macro_f1"]["value"] == pytest.approx(f1_score(labels(GOLD), labels(V1), average="macro"), abs=1e-4)
    assert result["kappa"]["value"] == pytest.approx(cohen_kappa_score(labels(GOLD), labels(V1)), abs=1e-4)
    for key in ("accuracy", "macro_f1", "kappa"):
        assert result[key]["low"] <= result[key]["value"] <= result[key]["high"]
    assert set(result["by_language"]) == {"fr", "ja"}


def test_latest_version_and_language_filter(judge):
    result = report("--language", "ja")
    assert result["version"] == "v2" and result["language"] == "ja" and result["n"] == 4
    assert result["accuracy"]["value"] == pytest.approx(accuracy_score(labels(GOLD[4:]), labels(V2[4:])), abs=1e-4)


def test_text_output_and_errors(judge):
    out = StringIO()
    call_command("judge_report", "--judge", "speakability", "--version", "v1", "--bootstrap", "100", stdout=out)
    text = out.getvalue()
    assert text.startswith("speakability@v1") and "accuracy 0.750 [" in text and "fr " in text
    with pytest.raises(CommandError, match="no version 'v9'"):
        call_command("judge_report", "--judge", "speakability", "--version", "v9")
    with pytest.raises(CommandError, match="No judge"):
        call_command("judge_report", "--judge", "nobody")
