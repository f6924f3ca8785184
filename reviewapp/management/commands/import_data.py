"""python manage.py import_data PATH: import conversations, gold labels and judge outputs."""

import json

from django.core.management.base import BaseCommand, CommandError

from reviewapp.corpus.importers import FORMATS
from reviewapp.corpus.services.imports import ImportFailed, dataset_import
from reviewapp.exports.tasks.exports import export_lines_keep_after_import


class Command(BaseCommand):
    help = (
        "Import a Tribunal JSONL/CSV file, an EVA run folder or an EVA judge-validation set. "
        "Prints one line of JSON with what the input holds and what was new."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="file, or an EVA run folder (records/, its parent, or one record)")
        parser.add_argument("--format", dest="fmt", choices=FORMATS, default="auto")
        parser.add_argument("--dataset", dest="dataset_name", help="dataset name (default: from the path)")
        parser.add_argument("--language", help="BCP 47 language for records that do not say (default: en)")
        parser.add_argument(
            "--skip-invalid", action="store_true", help="import the good records and list the bad ones in errors"
        )

    def handle(self, *args, path, fmt, dataset_name, language, skip_invalid, **options):
        try:
            summary = dataset_import(
                path=path, fmt=fmt, dataset_name=dataset_name, language=language, skip_invalid=skip_invalid
            )
        except ImportFailed as failure:
            self.stdout.write(json.dumps(failure.summary.as_dict(), ensure_ascii=False))
            raise CommandError(f"import failed, nothing written: {failure}") from failure
        self.stdout.write(json.dumps(summary.as_dict(), ensure_ascii=False))
        export_lines_keep_after_import(summary)  # the export rows of what came in (PostgreSQL)
