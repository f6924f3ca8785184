"""Imports started from the browser, on a worker (the page polls the job's progress)."""

from celery import shared_task

from reviewapp.corpus.services.import_jobs import import_job_run
from reviewapp.exports.tasks.exports import export_lines_keep_queue
from reviewapp.models import ImportJob


def import_job_queue(job_id: int) -> None:
    """Queue a recorded import job: what callers hand to import_job_start."""
    import_job_task.delay(job_id)


@shared_task(acks_late=True)
def import_job_task(job_id: int) -> dict:
    """Safe to run twice: the import is idempotent and a finished job is left as it is."""
    job = import_job_run(job_id=job_id)
    if job.status == ImportJob.Status.DONE and job.dataset_id is not None:
        export_lines_keep_queue(job.dataset_id)  # the export rows of what it brought (PostgreSQL)
    return {"job": job.pk, "status": job.status}
