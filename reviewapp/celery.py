"""The site's Celery app, configured from the Django settings (CELERY_*).

Loaded by the task packages (reviewapp/corpus/tasks, judging/tasks, exports/tasks), so that a process
which queues or runs a task has this app, and by `celery -A reviewapp`; a command or page that queues
nothing does not load Celery.
"""

import os

from celery import Celery
from celery.schedules import crontab

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
