"""A signature's language is a select of the known languages, checked on the server: a value that is no
language code, or none at all, is refused in the form."""

import pytest

from reviewapp.judging.forms.signatures import SignatureForm
from tests import factories
from tests.factories import dataset_of_calls

pytestmark = pytest.mark.django_db


@pytest.fixture
def data():
    dataset = dataset_of_calls("calls", {"a": ("fr-CA", ["Bonjour, je vous écoute."]), "b": ("en", ["Hi"])})
    turn = dataset.conversations.get(external_id="a").turns.get(role="agent")
    judge = factories.judge()
    return {
        "judge": judge.slug,
        "language": "fr-CA",
        "intent": "greeting",
        "kind": "substring",
        "pattern": "je vous écoute",
        "label": "greeting",
        "passed": "unknown",
        "evidence": str(turn.pk),
    }


def test_the_language_is_a_select_of_the_known_languages(data):
    html = str(SignatureForm()["language"])
    assert html.startswith("<select") and '<option value="" selected>Choose a language</option>' in html
    assert SignatureForm().fields["language"].choices == [
        ("", "Choose a language"),
        ("en", "en"),
        ("fr", "fr"),
        ("fr-CA", "fr-CA"),
    ]
    form = SignatureForm(data)
    assert form.is_valid(), form.errors
    assert form.cleaned_data["language"] == "fr-CA"


@pytest.mark.parametrize(
    ("language", "error"),
    [
        ("fr;drop", "fr;drop is not a BCP 47 language code (en, fr, fr-CA, ja ...)."),
        ("français", "français is not a BCP 47 language code (en, fr, fr-CA, ja ...)."),
        ("", "This field is required."),
        # Well formed but longer than the 35 characters Signature.language holds: refused here, not a 500.
        (
            "en-abcdefgh-abcdefgh-abcdefgh-abcdefgh",
            "en-abcdefgh-abcdefgh-abcdefgh-abcdefgh is not a BCP 47 language code (en, fr, fr-CA, ja ...).",
        ),
    ],
)
def test_a_bad_language_is_refused_by_the_form(data, language, error):
    form = SignatureForm({**data, "language": language})
    assert not form.is_valid()
    assert form.errors["language"] == [error]
