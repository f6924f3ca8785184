"""Celery tasks of this stage: each module is imported here so the worker registers it, after the site's
Celery app (reviewapp.celery), which the tasks are sent with."""

import reviewapp.celery  # noqa: F401
from reviewapp.exports.tasks import (
    exports,  # noqa: F401
)
