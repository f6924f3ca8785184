"""The People page's forms: a person's role and the languages they review, ticked from the known ones."""

from __future__ import annotations

from django import forms

from reviewapp.corpus.forms.languages import LanguagesField
from reviewapp.corpus.importers.limits import language_problem
from reviewapp.models import Role

LANGUAGES_HELP = "A base language (fr) covers its regional variants (fr-CA). Leads and admins see every language."


class _LanguagesForm(forms.Form):
    """Offers the languages of the data, and any the person already reviews that has no data yet; codes
    with no data at all (a team set up before its first import) are typed in `other_languages`."""

    other_languages = forms.CharField(
        required=False,
        max_length=200,
        label="Other languages",
        help_text="Codes with no conversations yet, separated by commas: ja, pt-BR.",
    )

    def clean_other_languages(self) -> list[str]:
        codes = [code.strip() for code in self.cleaned_data["other_languages"].split(",") if code.strip()]
        wrong = [code for code in codes if language_problem(code)]
        if wrong:
            raise forms.ValidationError(f"{', '.join(wrong)}: not a BCP 47 language code (en, fr, fr-CA, ja ...).")
        return codes

    def clean(self):
        cleaned = super().clean()
        others = cleaned.pop("other_languages", [])
        if "languages" in cleaned:
            cleaned["languages"] = [*cleaned["languages"], *others]
        return cleaned

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        order = [name for name in self.fields if name != "other_languages"]
        order.insert(order.index("languages") + 1, "other_languages")
        self.order_fields(order)
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
