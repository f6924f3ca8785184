"""Celery tasks of this stage: each module is imported here so the worker registers it."""

from reviewapp.corpus.tasks import (
    import_jobs,  # noqa: F401
    imports,  # noqa: F401
)
