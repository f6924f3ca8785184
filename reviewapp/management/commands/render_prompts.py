"""Write the golden renders: every shipped judge's prompts for a fixed sample, one file a language.

    python manage.py render_prompts --out tests/fixtures

The sample is built in code (not from the database); tests/scoring/test_golden_renders.py
re-renders it and fails with a diff when a prompt changed and the fixtures were not regenerated.
"""

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from reviewapp.judging.services.judge_inputs import golden_renders
from scoring.specs import SpecError, load_specs


def golden_json(renders_for_language) -> str:
    return json.dumps(renders_for_language, ensure_ascii=False, indent=2, sort_keys=True) + "\n"


class Command(BaseCommand):
    help = "Render every shipped judge for the fixed sample into <out>/judge_prompts_<lang>.json."

    def add_arguments(self, parser):
        parser.add_argument("--out", default="tests/fixtures", help="Directory for judge_prompts_<lang>.json.")
        parser.add_argument("--judges", default="judges", help="Directory (or file) of judge specs.")

    def handle(self, *args, out, judges, **options):
        try:
            specs = load_specs(judges)
        except SpecError as exc:
            raise CommandError(str(exc)) from exc
        out_dir = Path(out)
        out_dir.mkdir(parents=True, exist_ok=True)
        for language, renders in golden_renders(specs).items():
            path = out_dir / f"judge_prompts_{language}.json"
            path.write_text(golden_json(renders), encoding="utf-8")
            count = sum(len(prompts) for prompts in renders.values())
            self.stdout.write(f"{path}: {count} prompts from {len(renders)} judges")
