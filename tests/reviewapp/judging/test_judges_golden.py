"""Golden renders: the exact prompts each shipped judge sends for a fixed sample.

A change to a judge YAML or to the input mapping changes these prompts. That is allowed, but it
must be deliberate: regenerate the fixtures and review their diff with the change.
"""

import difflib
import json
from pathlib import Path

import pytest

from reviewapp.judging.services.judge_inputs import golden_renders, sample_conversations
from reviewapp.management.commands.render_prompts import golden_json
from scoring.specs import load_specs

ROOT = Path(__file__).resolve().parents[3]
FIXTURES = ROOT / "tests" / "fixtures"
REGENERATE = ".venv/bin/python manage.py render_prompts --out tests/fixtures"


def test_sample_covers_the_languages():
    assert [c.language for c, _turns in sample_conversations()] == ["en", "fr", "fr-CA", "ja", "hi"]


def golden_problem(language: str, fixtures: Path) -> str:
    """ "" when the stored golden file matches today's render, else a message with the diff."""
    current = golden_json(golden_renders(load_specs(ROOT / "judges"))[language])
    path = fixtures / f"judge_prompts_{language}.json"
    stored = path.read_text(encoding="utf-8") if path.exists() else ""
    if current == stored:
        return ""
    diff = "".join(
        difflib.unified_diff(
            stored.splitlines(keepends=True),
            current.splitlines(keepends=True),
            fromfile=f"{path.name} (stored)",
            tofile=f"{path.name} (rendered now)",
            n=2,
        )
    )
    return (
        f"Rendered prompts for {language} changed without the golden file being regenerated.\n"
        f"If the change is intended, run: {REGENERATE}\n\n{diff[:6000]}"
    )


@pytest.mark.parametrize("language", ["en", "fr", "fr-CA", "ja", "hi"])
def test_renders_match_the_golden_files(language):
    problem = golden_problem(language, FIXTURES)
    if problem:
        pytest.fail(problem, pytrace=False)


def test_golden_files_show_language_guidance():
    fr_ca = json.loads((FIXTURES / "judge_prompts_fr-CA.json").read_text(encoding="utf-8"))
    en = json.loads((FIXTURES / "judge_prompts_en.json").read_text(encoding="utf-8"))
    assert "Language notes (Canadian French)" in fr_ca["speakability@1.0"][0]["user"]
    assert "Language notes (French)" in fr_ca["faithfulness@1.0"][0]["user"]
    assert "Language notes" not in en["speakability@1.0"][0]["user"]


def test_a_stale_golden_file_fails_with_a_diff_and_the_command(tmp_path):
    stale = (FIXTURES / "judge_prompts_fr.json").read_text(encoding="utf-8").replace("Bien sûr.", "Bien entendu.")
    (tmp_path / "judge_prompts_fr.json").write_text(stale, encoding="utf-8")
    problem = golden_problem("fr", tmp_path)
    assert REGENERATE in problem
    assert "-" in problem and "Bien entendu." in problem and "+" in problem
    assert "judge_prompts_fr.json (stored)" in problem
    assert golden_problem("fr", FIXTURES) == ""
