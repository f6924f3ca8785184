"""Store judge specs from YAML as immutable JudgeVersions.

    python manage.py load_judges judges/
    python manage.py load_judges tests/fixtures/eva_judges.yaml

All files are loaded in one transaction: when one spec changed its text without a new version,
nothing is stored and the command names the judge, the version and both hashes.
"""

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from scoring.specs import SpecError, load_specs, spec_hash

from ...services.judges import JudgeSpecConflict, judge_version_ensure


class Command(BaseCommand):
    help = "Load judge specs (Tribunal or EVA-style YAML, a file or a directory) as immutable judge versions."

    def add_arguments(self, parser):
        parser.add_argument("path", nargs="?", default="judges", help="A YAML file or a directory of them.")

    def handle(self, *args, path, **options):
        try:
            specs = load_specs(path)
        except SpecError as exc:
            raise CommandError(str(exc)) from exc
        if not specs:
            raise CommandError(f"no judge spec found in {path}")
        conflicts = []
        lines = []
        with transaction.atomic():
            for spec in specs:
                try:
                    stored = judge_version_ensure(spec=spec)
                except JudgeSpecConflict as exc:
                    conflicts.append(str(exc))
                    continue
                except SpecError as exc:
                    conflicts.append(str(exc))
                    continue
                state = "created" if stored.created else "unchanged"
                lines.append(f"{spec.key:<40} {state:<10} {spec_hash(spec)[:12]}  {spec.source}")
            if conflicts:
                transaction.set_rollback(True)
        if conflicts:
            raise CommandError("refused, nothing stored:\n" + "\n".join(conflicts))
        for line in lines:
            self.stdout.write(line)
