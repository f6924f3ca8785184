"""Celery tasks of this stage: each module is imported here so the worker registers it, after the site's
Celery app (reviewapp.celery), which the tasks are sent with."""

import reviewapp.celery  # noqa: F401
from reviewapp.judging.tasks import (
    replays,  # noqa: F401
    retention,  # noqa: F401
    signatures,  # noqa: F401
    sweeps,  # noqa: F401
)
