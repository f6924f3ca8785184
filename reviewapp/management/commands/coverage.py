"""The edge-case coverage matrix of a rubric judge.

python manage.py coverage --judge SLUG [--version V] [--json]
"""

from __future__ import annotations

import json

from django.core.management.base import CommandError

from reviewapp.management.base import JudgeVersionCommand
from reviewapp.models import Judge
from reviewapp.quality.selectors.coverage import coverage_matrix
from scoring.planner import INSUFFICIENT


class Command(JudgeVersionCommand):
    help = "Print each edge case x criterion: turns, pass rate with its Wilson interval, human-labelled turns."

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--json", action="store_true")

    def handle(self, *args, **options):
        judge = Judge.objects.filter(slug=options["judge"]).first()
        if judge is None:
            raise CommandError(f"No judge {options['judge']!r}.")
        version = self.judge_version(options) if options["version"] else None
        matrix = coverage_matrix(judge=judge, version=version)
        if options["json"]:
            self.stdout.write(json.dumps(matrix.as_dict(), indent=2, ensure_ascii=False))
            return
        if not matrix.rows:
            self.stdout.write(f"{judge.slug} has no edge case.")
            return
        self.stdout.write(
            f"{judge.slug}@{matrix.version.version if matrix.version else '-'}: {len(matrix.rows)} edge cases"
        )
        for row in matrix.rows:
            self.stdout.write(f"{row.case.position}. {row.case.case} ({row.conversations} conversations tagged)")
            for cell in row.cells:
                if not cell.targeted and not cell.scored:
                    continue
                rate = "-" if cell.pass_rate is None else f"{cell.pass_rate:.1%}"
                interval = f"[{cell.interval[0]:.3f}, {cell.interval[1]:.3f}]" if cell.interval else "-"
                floor = "" if cell.sufficient else f" ({INSUFFICIENT})"
                mark = "*" if cell.targeted else " "
                self.stdout.write(
                    f"   {mark} {cell.criterion:<48} turns {cell.turns:>4}  pass {rate:>6} {interval}{floor}"
                    f"  human-labelled {cell.labelled}"
                )
