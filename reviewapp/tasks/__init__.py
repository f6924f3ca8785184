"""Celery tasks: each submodule is imported here so the worker registers it."""
