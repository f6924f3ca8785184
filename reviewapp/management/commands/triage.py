"""Queue a dataset's verdicts that need people: disagreements with gold, unresolved answers, a QA sample.

    python manage.py triage --dataset NAME [--qa-rate R] [--judge SLUG] [--json]

The QA sample is drawn at random from every target each judge scored in the dataset, stratified by
language, whatever the judge and gold said; each QA item stores its weight (1 / inclusion
probability) for the quality page's Hajek estimate. Running it again adds nothing new.
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from reviewapp.models import Dataset, Judge
from reviewapp.triage.services.queue_items import DEFAULT_QA_RATE, TriageError, dataset_triage


class Command(BaseCommand):
    help = "Queue a dataset's verdicts that need people: gold disagreements, unresolved answers, a random QA sample."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--dataset", required=True, help="Dataset name.")
        parser.add_argument(
            "--qa-rate",
            type=float,
            default=DEFAULT_QA_RATE,
            help=f"Share sampled per language (default {DEFAULT_QA_RATE}).",
        )
        parser.add_argument("--judge", default="", help="Only this judge's verdicts (slug).")
        parser.add_argument("--json", action="store_true", help="Print the summary as JSON.")

    def handle(self, *args, **options) -> None:
        try:
            dataset = Dataset.objects.get(name=options["dataset"])
        except Dataset.DoesNotExist:
            raise CommandError(f"No dataset named {options['dataset']!r}.") from None
        judge = None
        if options["judge"]:
            judge = Judge.objects.filter(slug=options["judge"]).first()
            if judge is None:
                raise CommandError(f"No judge {options['judge']!r}.")
        try:
            summary = dataset_triage(dataset=dataset, qa_rate=options["qa_rate"], judge=judge)
        except TriageError as error:
            raise CommandError(str(error)) from None
        if options["json"]:
            self.stdout.write(json.dumps(summary.as_dict(), indent=2, ensure_ascii=False))
            return
        self.stdout.write(
            f"{dataset.name}: {summary.items_created} item(s) queued, {summary.items_updated} updated; "
            + (", ".join(f"{reason} {n}" for reason, n in sorted(summary.reasons.items())) or "nothing needs people")
        )
        for slug, languages in summary.qa_sample.items():
            for language, stats in languages.items():
                self.stdout.write(
                    f"  QA sample {slug} {language}: {stats['sampled']} of {stats['targets']} "
                    f"(inclusion probability {stats['probability']:.4g})"
                )
