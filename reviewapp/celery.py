"""The site's Celery app, configured from the Django settings (CELERY_*).

Loaded by the task packages (reviewapp/corpus/tasks, judging/tasks, exports/tasks), so that a process
which queues or runs a task has this app, and by `celery -A reviewapp`; a command or page that queues
nothing does not load Celery.
"""

import gc
import importlib
import os

from celery import Celery
from celery.schedules import crontab
from celery.signals import worker_init

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "reviewapp.settings")

app = Celery("tribunal")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["reviewapp.corpus", "reviewapp.judging", "reviewapp.exports"])


def beat_schedule(entries: dict) -> dict:
    """settings.CELERY_BEAT_SCHEDULE, each schedule given as a dict of crontab fields made a crontab."""
    return {
        name: {**entry, "schedule": crontab(**entry["schedule"])} if isinstance(entry["schedule"], dict) else entry
        for name, entry in entries.items()
    }


app.conf.beat_schedule = beat_schedule(app.conf.beat_schedule)


# What the worker's tasks import on first use, and each pool process would import again: loaded once by
# the worker's main process before it forks its pool, so no process's first Parquet export or first LLM
# judge call pays for it (pyarrow's modules about 0.15 s of a 100,000-row export's 1 s, openai about
# 0.4 s) and the pool shares those pages. Pages and commands still load neither. Then every object
# loaded so far is frozen out of the garbage collector (gc.freeze, as Python's documentation advises
# before a fork): a pool process's full collections no longer walk the modules' objects (a kept JSONL
# export of 100,000 rows: 114,000-121,000 rows/s with them walked, 124,000-127,000 frozen) and do not
# write to the pages it shares.
WORKER_PRELOAD = ("pyarrow", "pyarrow.compute", "pyarrow.csv", "pyarrow.ipc", "pyarrow.parquet", "openai")


@worker_init.connect
def preload_worker(**_kwargs) -> None:
    for name in WORKER_PRELOAD:
        importlib.import_module(name)
    gc.collect()
    gc.freeze()
