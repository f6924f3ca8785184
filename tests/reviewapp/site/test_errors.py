"""One error hierarchy: every error class the app defines is a TribunalError."""

import importlib
import inspect
import pkgutil

import pytest

import reviewapp
import scoring
from scoring.errors import TribunalError


def _modules():
    for package in (reviewapp, scoring):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if ".migrations" in info.name or info.name.endswith((".wsgi", ".asgi", ".production")):
                continue
            yield importlib.import_module(info.name)


def _error_classes():
    found = {}
    for module in _modules():
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, BaseException)
                and value.__module__ == module.__name__
                and not name.startswith("_")
            ):
                found[f"{module.__name__}.{name}"] = value
    return found


def test_the_app_defines_its_errors():
    names = set(_error_classes())
    # A few that callers catch by name: if the walk stopped finding modules, this fails.
    for expected in (
        "scoring.specs.SpecError",
        "scoring.strictjson.StrictJSONError",
        "reviewapp.adjudication.services.adjudication.AdjudicationError",
        "reviewapp.corpus.importers.records.RecordError",
        "reviewapp.api.errors.ApiError",
    ):
        assert expected in names
    assert len(names) >= 30


@pytest.mark.parametrize("name", sorted(_error_classes()))
def test_every_error_is_a_tribunal_error(name):
    assert issubclass(_error_classes()[name], TribunalError), f"{name} does not derive from TribunalError"


def test_former_value_errors_are_still_value_errors():
    from reviewapp.judging.services.sweeps.plan import SweepError
    from scoring.specs import MissingVariable, SpecError

    assert issubclass(SweepError, ValueError) and issubclass(SpecError, ValueError)
    assert issubclass(MissingVariable, KeyError)
