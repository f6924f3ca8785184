"""Modules loaded on first use: a page or command that never computes a statistic never pays for numpy.

`importlib.util.LazyLoader` (the standard library's own lazy import) puts the module in sys.modules at
once and runs it the first time one of its attributes is read.
"""

from __future__ import annotations

import importlib.util
import sys
from types import ModuleType


def lazy_import(name: str) -> ModuleType:
    """The module `name`, loaded when first used (at once if it is loaded already)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module
