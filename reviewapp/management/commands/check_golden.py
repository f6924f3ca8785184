"""Run a rubric judge's golden examples as tests of its rendered prompt.

    python manage.py check_golden --judge SLUG [--version V]

Each pass/fail example of each criterion is rendered into the judge's prompt and checked: the prompt
renders, carries the example verbatim, the criterion with its definition, the answer shape for every
criterion and the uncertainty fallback. Exits 1 when one fails.
"""

from __future__ import annotations

import sys

from django.core.management.base import BaseCommand, CommandError

from scoring.rubric_import import golden_cases, golden_check

from ...services.judges import JudgeLookupError, judge_version_for, spec_of


class Command(BaseCommand):
    help = "Render each golden example of a rubric judge into its prompt and check it; exit 1 on a failure."

    def create_parser(self, prog_name, subcommand, **kwargs):
        # --version names a judge version here, not Django's version: ours replaces the built-in flag.
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser):
        parser.add_argument("--judge", required=True)
        parser.add_argument("--version", default="")

    def handle(self, *args, **options):
        ref = options["judge"] + (f"@{options['version']}" if options["version"] else "")
        try:
            version = judge_version_for(ref)
        except JudgeLookupError as exc:
            raise CommandError(str(exc)) from exc
        spec = spec_of(version)
        cases = golden_cases(spec)
        if not cases:
            raise CommandError(f"{spec.key} has no golden example.")
        failed = 0
        for case in cases:
            check = golden_check(spec, case)
            state = "ok  " if check.ok else "FAIL"
            self.stdout.write(f"{state} {case.criterion} [{case.expected}] {case.text[:70]}")
            for problem in check.problems:
                self.stdout.write(f"       {problem}")
            failed += not check.ok
        self.stdout.write(f"{len(cases) - failed} of {len(cases)} golden examples pass.")
        if failed:
            sys.exit(1)
