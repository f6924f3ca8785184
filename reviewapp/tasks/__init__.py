"""Celery tasks: each submodule is imported here so the worker registers it."""

from . import (
    exports,  # noqa: F401
    import_jobs,  # noqa: F401
    imports,  # noqa: F401
    replays,  # noqa: F401
    retention,  # noqa: F401
    signatures,  # noqa: F401
    sweeps,  # noqa: F401
)
