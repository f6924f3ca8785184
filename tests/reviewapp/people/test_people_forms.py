"""A person's languages are ticked from the known languages (and any they already review), checked on the
server: a value that is no language code is refused in the form, before any service runs."""

import re

import pytest

from reviewapp.people.forms.people import PersonCreateForm, PersonForm
from tests.factories import dataset_of_calls

pytestmark = pytest.mark.django_db
NEW = {"username": "noor", "password": "a-long-pass-phrase-42", "role": "reviewer"}


def test_the_languages_are_ticks_of_the_known_languages_and_those_the_person_reviews():
    dataset_of_calls("calls", {"a": ("fr-CA", ["Bonjour"]), "b": ("en", ["Hi"])})
    created = str(PersonCreateForm()["languages"])
    assert created.count('type="checkbox" name="languages"') == 3
    assert 'value="en"' in created and 'value="fr"' in created and 'value="fr-CA"' in created
    edited = PersonForm(initial={"role": "reviewer", "languages": ["ja", "fr"]})
    assert edited.fields["languages"].choices == [("en", "en"), ("fr", "fr"), ("fr-CA", "fr-CA"), ("ja", "ja")]
    ticked = re.findall(r'value="([^"]+)"[^>]*\bchecked', str(edited["languages"]))
    assert ticked == ["fr", "ja"]


def test_a_bad_language_is_refused_by_the_form():
    dataset_of_calls("calls", {"a": ("fr", ["Bonjour"])})
    good = PersonCreateForm({**NEW, "languages": ["fr", "de"]})
    assert good.is_valid(), good.errors
    assert good.cleaned_data["languages"] == ["fr", "de"]
    bad = PersonCreateForm({**NEW, "languages": ["fr", "fr, de"]})
    assert not bad.is_valid()
    assert bad.errors["languages"] == ["fr, de is not a BCP 47 language code (en, fr, fr-CA, ja ...)."]
    edit = PersonForm({"role": "reviewer", "languages": ["<b>fr</b>"]})
    assert not edit.is_valid() and list(edit.errors) == ["languages"]


def test_the_edit_form_starts_from_the_person_as_they_stand(make_user):
    ana = make_user("ana", languages=["fr", "ja"])
    form = PersonForm.for_person(ana, ana.profile)
    assert form.initial == {"role": "reviewer", "languages": ["fr", "ja"], "is_active": True}
    assert PersonForm.for_person(ana, None).initial == {"role": "reviewer", "languages": [], "is_active": True}
