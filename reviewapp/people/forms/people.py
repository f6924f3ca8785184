"""The People page's forms: a person's role and the languages they review, ticked from the known ones."""

from __future__ import annotations

from django import forms

from reviewapp.corpus.forms.languages import LanguagesField
from reviewapp.models import Role

LANGUAGES_HELP = "A base language (fr) covers its regional variants (fr-CA). Leads and admins see every language."


class _LanguagesForm(forms.Form):
    """Offers the languages of the data, and any the person already reviews that has no data yet."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        field = self.fields["languages"]
        field.load_choices()
        known = [code for code, _ in field.choices]
        held = [code for code in self.initial.get("languages", ()) if code not in known]
        field.choices = [(code, code) for code in sorted([*known, *held], key=str.lower)]


class PersonForm(_LanguagesForm):
    role = forms.ChoiceField(choices=Role.choices)
    languages = LanguagesField(help_text=LANGUAGES_HELP)
    is_active = forms.BooleanField(required=False, label="Can log in")

    @classmethod
    def for_person(cls, person, profile, data=None) -> PersonForm:
        """The form as the person stands: their role (a reviewer's without a profile), languages and login."""
        role, languages = (profile.role, list(profile.languages)) if profile else (Role.REVIEWER, [])
        return cls(data, initial={"role": role, "languages": languages, "is_active": person.is_active})


class PersonCreateForm(_LanguagesForm):
    username = forms.CharField(max_length=150)
    email = forms.EmailField(required=False)
    password = forms.CharField(widget=forms.PasswordInput, help_text="They can change it after logging in.")
    role = forms.ChoiceField(choices=Role.choices, initial=Role.REVIEWER)
    languages = LanguagesField(help_text=LANGUAGES_HELP)
