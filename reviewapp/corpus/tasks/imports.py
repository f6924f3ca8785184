"""Imports on a Celery worker, for files too large to import inside a web request."""

import logging
from typing import Any

from celery import shared_task

from reviewapp.corpus.services.imports import ImportFailed, dataset_import
from reviewapp.exports.tasks.exports import export_lines_keep_after_import

logger = logging.getLogger(__name__)


@shared_task(acks_late=True)
def import_file(
    path: str,
    fmt: str = "auto",
    dataset_name: str | None = None,
    language: str | None = None,
    skip_invalid: bool = False,
) -> dict[str, Any]:
    """Import one file (or EVA run folder) into a dataset and return the import summary as a dict.

    Safe to run twice: dataset_import is idempotent, so a redelivered task adds nothing new. A refused
    input is not retried (it would be refused again): its summary, with the errors, is returned.
    """
    try:
        summary = dataset_import(
            path=path, fmt=fmt, dataset_name=dataset_name, language=language, skip_invalid=skip_invalid
        )
    except ImportFailed as failure:
        logger.warning("import of %s refused: %s", path, failure)
        return failure.summary.as_dict()
    export_lines_keep_after_import(summary)  # the export rows of what came in (PostgreSQL)
    return summary.as_dict()
