import sys

import pytest

from scoring.lazy import lazy_import


def test_a_lazy_module_runs_on_first_attribute_read_and_only_then(tmp_path, monkeypatch):
    (tmp_path / "lazy_probe_module.py").write_text(
        "import sys\nsys.lazy_probe_runs = getattr(sys, 'lazy_probe_runs', 0) + 1\nVALUE = 42\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "lazy_probe_module", raising=False)
    monkeypatch.setattr(sys, "lazy_probe_runs", 0, raising=False)

    module = lazy_import("lazy_probe_module")

    assert sys.lazy_probe_runs == 0
    assert sys.modules["lazy_probe_module"] is module
    assert module.VALUE == 42
    assert sys.lazy_probe_runs == 1
    assert lazy_import("lazy_probe_module").VALUE == 42
    assert sys.lazy_probe_runs == 1
    monkeypatch.delitem(sys.modules, "lazy_probe_module")


def test_a_module_already_loaded_is_returned_as_it_is():
    import json

    assert lazy_import("json") is json


def test_a_missing_module_is_refused_at_once():
    with pytest.raises(ModuleNotFoundError):
        lazy_import("no_such_module_anywhere_here")
