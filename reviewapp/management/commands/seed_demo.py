from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from reviewapp.demo.loader import DEMO_DATASET, demo_seed


class Command(BaseCommand):
    help = (
        f"Load the multilingual demo dataset '{DEMO_DATASET}' from the files in demo/: its labels, verdicts, "
        "judge versions, review queue, signatures and demo accounts."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--reset", action="store_true", help="Delete the demo dataset and demo judge versions first."
        )
        parser.add_argument(
            "--force",
            action="store_true",
            help="Run even when DEBUG is off. The demo accounts share a published password: never on a shared server.",
        )

    def handle(self, *args, reset: bool, force: bool, **options):
        if not settings.DEBUG and not force:
            raise CommandError(
                "DEBUG is off: seed_demo creates accounts with a published password. Use --force on a private machine."
            )
        summary = demo_seed(reset=reset)
        self.stdout.write(
            self.style.SUCCESS(
                f"Demo dataset '{DEMO_DATASET}' (id {summary.dataset_id}): {summary.conversations} conversations, "
                f"{summary.turns} turns, {summary.gold_labels} gold labels, {summary.verdicts} imported verdicts, "
                f"{summary.categories} failure categories."
            )
        )
        self.stdout.write(f"Languages: {', '.join(summary.languages)}")
        signatures = summary.signatures
        self.stdout.write(f"Signatures: {signatures.created} created, {signatures.kept} kept")
        for refused in signatures.refused or []:
            self.stdout.write(self.style.WARNING(f"  refused {refused}"))
        self.stdout.write("")
        self.stdout.write("Demo accounts (demo only: a shared, published password; do not use on a shared server):")
        for username, role, languages in summary.users:
            self.stdout.write(f"  {username:<15} {role:<9} {', '.join(languages) or 'all languages'}")
        self.stdout.write(f"Password for all of them: {summary.password}")
