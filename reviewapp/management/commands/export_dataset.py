"""Export a judge's gold-labelled data as a versioned snapshot, in this process, and copy it to --out.

    python manage.py export_dataset --judge SLUG --format jsonl|csv|parquet|eva --out PATH
        [--name NAME] [--dataset NAME ...] [--language CODE ...] [--gold-source SOURCE ...]
        [--from YYYY-MM-DD] [--to YYYY-MM-DD]

The snapshot is recorded like one made on the Exports page (next version of NAME, file and datasheet
under MEDIA_ROOT/exports); the file is copied to PATH and its datasheet to PATH.datasheet.json.
Prints one line of JSON: snapshot, name, version, rows, sha256, out. Then, for JSONL and Parquet on
PostgreSQL, keeps the rows it built (as the export task does) so the next export reads them, unless
--no-keep-lines.
"""

from __future__ import annotations

import json
import shutil
from datetime import date
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from reviewapp.exports.services import export_lines
from reviewapp.exports.services import exports as exports_service
from reviewapp.models import Dataset, Judge


def _day(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError as exc:
        raise CommandError(f"{text!r} is not a date (YYYY-MM-DD).") from exc


class Command(BaseCommand):
    help = (
        "Write a versioned export snapshot of a judge's gold labels (JSONL, CSV, Parquet or EVA) and copy it to --out."
    )

    def add_arguments(self, parser):
        parser.add_argument("--judge", required=True, help="judge slug")
        parser.add_argument("--format", dest="fmt", required=True, choices=list(exports_service.FORMATS))
        parser.add_argument("--out", required=True, help="where to copy the file")
        parser.add_argument("--name", default="", help="snapshot name (default: the judge slug)")
        parser.add_argument("--dataset", action="append", default=[], help="dataset name (repeatable)")
        parser.add_argument("--language", action="append", default=[], help="BCP 47 code; fr covers fr-CA (repeatable)")
        parser.add_argument(
            "--gold-source",
            action="append",
            default=[],
            choices=["adjudicated", "unanimous", "imported"],
            help="gold sources to draw from (repeatable; default all)",
        )
        parser.add_argument("--from", dest="date_from", type=_day, help="gold labelled on or after")
        parser.add_argument("--to", dest="date_to", type=_day, help="gold labelled on or before")
        parser.add_argument("--chunk-size", type=int, default=2000, help="rows fetched per chunk")
        parser.add_argument(
            "--no-keep-lines",
            action="store_true",
            help="do not keep the rows built for the next export (JSONL and Parquet on PostgreSQL)",
        )

    def handle(self, *args, **options):
        judge = Judge.objects.filter(slug=options["judge"]).first()
        if judge is None:
            raise CommandError(f"No judge {options['judge']!r}.")
        datasets = dict(Dataset.objects.filter(name__in=options["dataset"]).values_list("name", "id"))
        missing = sorted(set(options["dataset"]) - set(datasets))
        if missing:
            raise CommandError(f"No dataset {', '.join(map(repr, missing))}.")
        try:
            snapshot = exports_service.snapshot_create(
                judge=judge,
                fmt=options["fmt"],
                name=options["name"],
                languages=options["language"],
                dataset_ids=list(datasets.values()),
                gold_sources=options["gold_source"],
                date_from=options["date_from"],
                date_to=options["date_to"],
                build=False,
            )
            snapshot = exports_service.snapshot_write(snapshot_id=snapshot.pk, chunk_size=options["chunk_size"])
        except exports_service.ExportError as exc:
            raise CommandError(str(exc)) from exc
        out = Path(options["out"])
        out.parent.mkdir(parents=True, exist_ok=True)
        source = exports_service.snapshot_path(snapshot)
        shutil.copyfile(source, out)
        shutil.copyfile(source.with_name(exports_service.datasheet_name(snapshot)), f"{out}.datasheet.json")
        self.stdout.write(
            json.dumps(
                {
                    "snapshot": snapshot.pk,
                    "name": snapshot.name,
                    "version": snapshot.version,
                    "rows": snapshot.row_count,
                    "sha256": snapshot.sha256,
                    "out": str(out),
                }
            )
        )
        self.stdout.flush()
        if options["fmt"] in ("jsonl", "parquet") and not options["no_keep_lines"]:
            export_lines.refresh(judge)
