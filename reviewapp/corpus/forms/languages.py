"""Language fields: a select (or ticks) of the known languages, which still take any well-formed BCP 47
code typed or posted, so that a code with no data reaches the service and gets its precise reason
("this dataset has no target in ja") instead of a bare "not a valid choice"."""

from django import forms

from reviewapp.corpus.selectors.languages import language_choices


class _WellFormedCodes:
    default_error_messages = {"invalid_choice": "%(value)s is not a BCP 47 language code (en, fr, fr-CA, ja ...)."}

    def valid_value(self, value) -> bool:
        """A code the importers would accept (limits.language_problem: BCP 47, at most the column's length)."""
        # Here, not at the top: importing limits imports every importer, and the admin loads this form.
        from reviewapp.corpus.importers.limits import language_problem

        return not language_problem(str(value))


class LanguageField(_WellFormedCodes, forms.ChoiceField):
    """One language, chosen from those in the data; blank means every language unless it is required."""

    def __init__(self, *, blank: str, required: bool = False, **kwargs):
        super().__init__(choices=(), required=required, **kwargs)
        self.blank = blank

    def load_choices(self) -> None:
        self.choices = language_choices(blank=self.blank)


class LanguagesField(_WellFormedCodes, forms.MultipleChoiceField):
    """Several languages, ticked from those in the data; none ticked means every language."""

    def __init__(self, **kwargs):
        kwargs.setdefault("widget", forms.CheckboxSelectMultiple)
        super().__init__(choices=(), required=False, **kwargs)

    def load_choices(self) -> None:
        self.choices = language_choices()
