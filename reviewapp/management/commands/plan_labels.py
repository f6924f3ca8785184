"""Where labels are needed next for a judge version: per language its n, Wilson interval, labels needed
for +-5 and +-3 points, and the budget's Neyman split.

    python manage.py plan_labels --judge SLUG [--version V] [--budget N] [--json] [--apply]

`--apply` sets the allocation as the queue's priority term for the judge's active items.
"""

from __future__ import annotations

import json

from django.core.management.base import CommandError

from reviewapp.management.base import JudgeVersionCommand
from reviewapp.triage.selectors.planner import DEFAULT_BUDGET, plan_cells
from reviewapp.triage.services.label_plan import label_plan_apply
from scoring.planner import EVIDENCE_FLOOR, INSUFFICIENT


class Command(JudgeVersionCommand):
    help = "Print the label planner's cells for a judge version (and optionally apply them to the queue)."

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument("--budget", type=int, default=DEFAULT_BUDGET)
        parser.add_argument("--json", action="store_true")
        parser.add_argument("--apply", action="store_true", help="Set the allocation as the queue's priority term.")

    def handle(self, *args, **options):
        if options["budget"] < 0:
            raise CommandError("--budget is zero or more labels.")
        version = self.judge_version(options, runnable=False)
        plan = plan_cells(version=version, budget=options["budget"])
        if options["apply"]:
            label_plan_apply(version=version, budget=max(1, options["budget"]))
        if options["json"]:
            self.stdout.write(json.dumps(plan.as_dict(), indent=2))
            return
        self.stdout.write(
            f"{version}: budget {plan.budget} labels, evidence floor n >= {EVIDENCE_FLOOR}, "
            f"{plan.excluded} target(s) excluded from gold (used to draft this version)"
        )
        header = ("language", "N", "n", "accuracy", "95% Wilson", "need ±5", "need ±3", "allocated")
        lines = [header]
        for c in plan.cells:
            interval = f"[{c.interval[0]:.3f}, {c.interval[1]:.3f}]" if c.interval else INSUFFICIENT
            accuracy = f"{c.accuracy:.3f}" if c.accuracy is not None else INSUFFICIENT
            lines.append(
                (
                    c.language,
                    str(c.cell.population),
                    str(c.cell.labelled),
                    accuracy,
                    interval,
                    str(c.need_5),
                    str(c.need_3),
                    str(c.allocated),
                )
            )
        widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
        for line in lines:
            self.stdout.write("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip())
