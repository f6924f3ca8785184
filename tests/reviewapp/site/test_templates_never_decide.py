"""Templates show what the access layer answered; they never decide who may see what themselves."""

import re
from pathlib import Path

TEMPLATES = Path(__file__).resolve().parents[3] / "templates"
CONDITION = re.compile(r"\{%\s*(?:el)?if\s+(.*?)%\}")
# Role, language and blind-review rules read straight off the user or the dataset.
DECIDING = re.compile(
    r"\buser\.(?:profile|is_superuser|is_staff|groups|has_perm)|\bblind_review\b|\bsees_all_languages\b"
)


def test_no_template_condition_reads_roles_languages_or_blind_mode():
    found = []
    for path in sorted(TEMPLATES.rglob("*.html")):
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            for condition in CONDITION.findall(line):
                if DECIDING.search(condition.replace("viewer.sees_all_languages", "")):
                    if "person.profile.sees_all_languages" in condition:
                        continue  # the People page shows another person's role as a fact
                    found.append(f"{path.relative_to(TEMPLATES)}:{number}: {{% if {condition.strip()} %}}")
    assert not found, "ask reviewapp/access.py in the view instead:\n" + "\n".join(found)


def test_the_check_finds_what_it_forbids():
    for condition in ("user.profile.sees_all_languages", "item.dataset.blind_review", "user.is_superuser or x"):
        assert DECIDING.search(condition)
    assert not DECIDING.search("viewer.is_lead and can_edit_settings")
