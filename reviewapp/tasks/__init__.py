"""Celery tasks: each submodule is imported here so the worker registers it."""

from . import (
    imports,  # noqa: F401
    sweeps,  # noqa: F401
)
