"""Celery tasks of this stage: each module is imported here so the worker registers it."""

from . import (
    import_jobs,  # noqa: F401
    imports,  # noqa: F401
)
