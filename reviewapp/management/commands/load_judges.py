"""Store judge specs from YAML as immutable JudgeVersions.

    python manage.py load_judges judges/
    python manage.py load_judges tests/fixtures/eva_judges.yaml
    python manage.py load_judges eva/configs/prompts/judge.yaml --version eva-997ae97
    python manage.py load_judges ../shared/data/rubric-generator/order-status.json --slug order-status

`--only SLUG,...` loads some judges of the path. `--version LABEL` names every version the path
stores (EVA files included), so the same file at two revisions loads as two versions side by side; the source kept with each version says which
file and label it came from. Without it a version keeps the label of its file (EVA files: a label
derived from the prompt text).

A rubric generator's JSON (told apart by its keys: rubric.criteria and rubric.judge_setup) becomes a
rubric judge with its edge cases, golden examples, variance check and kill criteria (see
scoring/rubric_import.py); `--slug` names the judge (default: the file name).

All files are loaded in one transaction: when one spec changed its text without a new version,
nothing is stored and the command names the judge, the version and both hashes.
"""

import dataclasses

from django.core.management.base import CommandError
from django.db import transaction

from reviewapp.judging.services.judges import JudgeLevelConflict, JudgeSpecConflict, judge_version_ensure
from reviewapp.judging.services.rubrics import rubric_judge_store
from reviewapp.management.base import VersionFlagCommand
from scoring.rubric_import import RubricImportError, looks_like_rubric_file, rubric_from_file
from scoring.specs import SpecError, load_specs, spec_hash


class Command(VersionFlagCommand):
    help = "Load judge specs (Tribunal or EVA-style YAML, a file or a directory) as immutable judge versions."

    def add_arguments(self, parser):
        parser.add_argument("path", nargs="?", default="judges", help="A YAML file or a directory of them.")
        parser.add_argument(
            "--version", default="", help="Version label for every spec stored (e.g. the file's git revision)."
        )
        parser.add_argument("--only", default="", help="Only these judges of the path: SLUG[,SLUG...].")
        parser.add_argument("--slug", default=None, help="The judge a rubric generator's JSON becomes.")

    def handle(self, *args, path, **options):
        if looks_like_rubric_file(path):
            return self._rubric(path, options["slug"])
        label = (options.get("version") or "").strip()
        if len(label) > 64:
            raise CommandError(f"--version {label!r} is longer than 64 characters")
        try:
            specs = load_specs(path)
        except SpecError as exc:
            raise CommandError(str(exc)) from exc
        if not specs:
            raise CommandError(f"no judge spec found in {path}")
        only = [slug.strip() for slug in (options.get("only") or "").split(",") if slug.strip()]
        if only:
            unknown = sorted(set(only) - {spec.slug for spec in specs})
            if unknown:
                known = ", ".join(sorted({spec.slug for spec in specs}))
                raise CommandError(f"{path} has no judge {', '.join(unknown)} (it has: {known})")
            specs = [spec for spec in specs if spec.slug in only]
        if label:
            specs = [
                dataclasses.replace(spec, version=label, source=f"{spec.source} (loaded as {label})"[:500])
                for spec in specs
            ]
        conflicts = []
        lines = []
        with transaction.atomic():
            for spec in specs:
                try:
                    stored = judge_version_ensure(spec=spec)
                except (JudgeSpecConflict, JudgeLevelConflict) as exc:
                    conflicts.append(str(exc))
                    continue
                except SpecError as exc:
                    conflicts.append(str(exc))
                    continue
                state = "created" if stored.created else f"unchanged (stored as {stored.version.version})"
                lines.append(f"{spec.key:<40} {state:<10} {spec_hash(spec)[:12]}  {spec.source}")
            if conflicts:
                transaction.set_rollback(True)
        if conflicts:
            raise CommandError("refused, nothing stored:\n" + "\n".join(conflicts))
        for line in lines:
            self.stdout.write(line)

    def _rubric(self, path: str, slug: str | None) -> None:
        try:
            imported = rubric_from_file(path, slug=slug)
            stored = rubric_judge_store(imported=imported)
        except (RubricImportError, SpecError, JudgeSpecConflict) as exc:
            raise CommandError(f"refused, nothing stored: {exc}") from exc
        spec = imported.spec
        state = "created" if stored.created else "unchanged"
        required = sum(1 for c in spec.criteria if c.required)
        self.stdout.write(f"{spec.key:<40} {state:<10} {spec_hash(spec)[:12]}  {spec.source}")
        self.stdout.write(
            f"rubric judge: {len(spec.criteria)} criteria ({required} required), {len(imported.golden)} golden "
            f"examples, {len(imported.edge_cases)} edge cases, {len(imported.kill_rules)} kill criteria"
        )
