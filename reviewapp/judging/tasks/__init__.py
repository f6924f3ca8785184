"""Celery tasks of this stage: each module is imported here so the worker registers it."""

from reviewapp.judging.tasks import (
    replays,  # noqa: F401
    retention,  # noqa: F401
    signatures,  # noqa: F401
    sweeps,  # noqa: F401
)
