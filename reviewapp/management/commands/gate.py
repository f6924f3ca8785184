"""Gate CI on a sweep: pass rate per judge version and criterion against its threshold.

    python manage.py gate --sweep ID [--json] [--threshold CRITERION=0.8 ...]

A threshold comes from the command line (CRITERION, SLUG:CRITERION or SLUG@VERSION:CRITERION; the
judge's own pass/fail is the criterion `overall`), else the spec's `gate` section (in its params),
else a rubric criterion's own threshold. The pass rate is passed / targets on run 0: unresolved
verdicts are reported in their own column and never count as a pass. Exits 1 when a required
criterion is below its threshold or the sweep is not done. A rubric judge's kill criteria that fire
print their own message and exit with their own code (selectors/kill_criteria.py); `--scope golden`
or `--scope production` says which set the sweep ran on when its dataset's kind does not.
"""

from __future__ import annotations

import json
import sys

from django.core.management.base import BaseCommand, CommandError

from reviewapp.judging.selectors import sweeps as sweep_selectors
from reviewapp.judging.selectors.sweeps import gate_report
from reviewapp.models import Sweep
from reviewapp.quality.selectors.kill_criteria import kill_criteria_check


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


class Command(BaseCommand):
    help = "Check a sweep's pass rates per criterion against their thresholds; exit 1 when one falls below."

    def add_arguments(self, parser):
        parser.add_argument("--sweep", type=int, required=True)
        parser.add_argument("--json", action="store_true", help="Print the report as JSON.")
        parser.add_argument(
            "--threshold", action="append", default=[], help="CRITERION=RATE (repeatable); overrides the spec."
        )
        parser.add_argument("--scope", choices=["golden", "production"], default="", help="The set the sweep ran on.")

    def handle(self, *args, **options):
        try:
            overrides = dict(sweep_selectors.parse_threshold(text) for text in options["threshold"])
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        sweep = Sweep.objects.filter(pk=options["sweep"]).first()
        if sweep is None:
            raise CommandError(f"No sweep {options['sweep']}.")
        report = gate_report(sweep=sweep, overrides=overrides)
        kill = kill_criteria_check(sweep=sweep, report=report, scope=options["scope"])
        if options["json"]:
            self.stdout.write(json.dumps({**report.as_dict(), "kill_criteria": kill.as_dict()}, indent=2))
        else:
            self._table(report)
            for hit in kill.hits:
                self.stdout.write(hit.message)
        if kill.hits:
            for hit in kill.hits:
                self.stderr.write(hit.message)
            sys.exit(kill.exit_code)
        if not report.passed:
            sys.exit(1)

    def _table(self, report) -> None:
        header = ("judge", "criterion", "targets", "pass", "fail", "unresolved", "n/a", "pass rate", "threshold", "")
        lines = [header]
        for row in report.rows:
            verdict = {True: "ok", False: "FAIL" if row.required else "below", None: ""}[row.ok]
            lines.append(
                (
                    row.judge_version,
                    row.criterion,
                    str(row.targets),
                    str(row.passed),
                    str(row.failed),
                    str(row.unresolved),
                    str(row.not_scored),
                    _pct(row.pass_rate),
                    ("-" if row.threshold is None else f"{row.threshold:.0%}") + ("" if row.required else " (info)"),
                    verdict,
                )
            )
        widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
        for line in lines:
            self.stdout.write("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip())
        if report.sweep_status != Sweep.Status.DONE:
            self.stdout.write(f"Sweep {report.sweep_id} is {report.sweep_status}, not done: the gate fails.")
        elif report.failing:
            names = ", ".join(f"{r.judge_version} {r.criterion}" for r in report.failing)
            self.stdout.write(f"Gate FAILED: {names}.")
        else:
            self.stdout.write("Gate passed.")
