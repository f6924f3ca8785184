"""python manage.py purge_judge_calls [--days N] [--dry-run]: drop old judge-call archives.

Deletes JudgeCall rows older than N days (default JUDGE_CALL_RETENTION_DAYS) and the prompt texts no
remaining call uses. Verdicts, gold labels, reviews and export snapshots stay. Celery beat runs the
same purge every night (CELERY_BEAT_SCHEDULE "judge-calls-purge").
"""

import json

from django.core.management.base import BaseCommand, CommandError

from reviewapp.judging.services.retention import RetentionError, judge_calls_purge


class Command(BaseCommand):
    help = "Delete judge-call archives older than the retention window (verdicts are kept)."

    def add_arguments(self, parser):
        parser.add_argument("--days", type=int, help="keep this many days (default: JUDGE_CALL_RETENTION_DAYS)")
        parser.add_argument("--dry-run", action="store_true", help="only count what would go")

    def handle(self, *args, days, dry_run, **options):
        try:
            result = judge_calls_purge(older_than_days=days, dry_run=dry_run)
        except RetentionError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(json.dumps(result.as_dict()))
