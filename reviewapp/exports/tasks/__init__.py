"""Celery tasks of this stage: each module is imported here so the worker registers it."""

from reviewapp.exports.tasks import (
    exports,  # noqa: F401
)
