"""Celery tasks of this stage: each module is imported here so the worker registers it."""

from reviewapp.judging.tasks import replays, retention, signatures, sweeps
