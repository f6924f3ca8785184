"""Judge quality on the command line: the numbers of the judge quality page, on one version and one slice.

    python manage.py judge_report --judge SLUG [--version V] [--language CODE] [--dataset NAME ...]
        [--sweep ID] [--from YYYY-MM-DD] [--to YYYY-MM-DD] [--unresolved excluded|wrong] [--json]
        [--bootstrap N]

Without --version the latest version is reported. Every figure is about that version on the slice
(datasets, sweep, language, verdict dates); the label set is the judge's scale or the slice's own
pairs. See docs/quality.md for every key.

JSON keys (kept): judge, version, language, n, targets, unresolved, accuracy, macro_f1, kappa (each
{value, low, high}), per_class_f1, confusion, labels, by_language, qa_weighted, qa_unweighted,
disputed, runs_accuracy ({mean, std, runs}), runs_macro_f1, gold_sources, reviewer_alpha.

New keys: slice ({datasets, sweep, language, date_from, date_to, unresolved}); unresolved_convention;
estimators (which estimator and interval each figure is); failed; without_gold; refused ({n, reasons:
{reason: n}}: pairs whose gold or verdict is on another field than the judge's outcome); conversions
({named rule: n}); accuracy_excluded and accuracy_wrong ({n, value, low, high}: unresolved left out,
and counted wrong in a fixed denominator); qa_sample ({estimator, sampled, with_gold, missing,
accuracy}); runs_accuracy_excluded and runs_accuracy_wrong ({mean, std, runs}); runs ({sweep,
dropped_targets, unresolved_after_first_run, per_run: [{run, n, resolved, unresolved, failed, right,
accuracy_excluded, accuracy_wrong}]}); evidence; pass_rates; sub_scores (weighted judges).
"""

from __future__ import annotations

import json
from datetime import date

from django.core.management.base import CommandError

from reviewapp.management.base import JudgeVersionCommand
from reviewapp.models import Judge
from reviewapp.quality.selectors import quality, quality_slice
from scoring.agreement import DEFAULT_BOOTSTRAP, Estimate


def _estimate(e: Estimate) -> str:
    if e.value is None:
        return "-"
    if e.low is None:
        return f"{e.value:.3f}"
    return f"{e.value:.3f} [{e.low:.3f}, {e.high:.3f}]"


def _figures(name: str, r, *, kappa: bool = True) -> str:
    """One line of a slice's figures: n, accuracy and macro-F1 (and kappa)."""
    line = f"  {name:<20} n={r.n:<5} accuracy {_estimate(r.accuracy)}  macro-F1 {_estimate(r.macro_f1)}"
    return line + (f"  kappa {_estimate(r.kappa)}" if kappa else "")


def _day(value: str) -> date:
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise CommandError(f"{value!r} is not a date (YYYY-MM-DD).") from None


class Command(JudgeVersionCommand):
    help = (
        "Accuracy (Wilson 95% interval), macro-F1 and Cohen's kappa (conversation bootstrap) of one judge version "
        "against gold, on an explicit slice. JSON keys: see the module docstring and docs/quality.md."
    )

    def add_arguments(self, parser) -> None:
        super().add_arguments(parser)
        parser.add_argument("--language", default="", help="Only this language (BCP 47; 'fr' covers 'fr-CA').")
        parser.add_argument(
            "--dataset", action="append", default=[], metavar="NAME", help="Only this dataset (repeatable)."
        )
        parser.add_argument("--sweep", type=int, default=None, metavar="ID", help="Only this sweep's verdicts.")
        parser.add_argument("--from", dest="date_from", type=_day, default=None, help="Verdicts on or after.")
        parser.add_argument("--to", dest="date_to", type=_day, default=None, help="Verdicts on or before.")
        parser.add_argument(
            "--unresolved",
            choices=quality_slice.CONVENTIONS,
            default="excluded",
            help="excluded (default): unresolved answers are left out; wrong: counted wrong in a fixed "
            "denominator (EVA's convention). Both accuracies are in the JSON either way.",
        )
        parser.add_argument("--json", action="store_true", help="Print JSON.")
        parser.add_argument("--bootstrap", type=int, default=DEFAULT_BOOTSTRAP, help="Bootstrap resamples.")

    def handle(self, *args, **options) -> None:
        try:
            judge = Judge.objects.get(slug=options["judge"])
        except Judge.DoesNotExist:
            raise CommandError(f"No judge {options['judge']!r}.") from None
        versions = quality.judge_versions(judge=judge)
        version = self.judge_version(options, runnable=False) if options["version"] else None
        if not versions:
            raise CommandError(f"{judge.slug} has no version yet.")
        try:
            slice = quality_slice.slice_for(
                datasets=options["dataset"],
                sweep_id=options["sweep"],
                language=options["language"],
                date_from=options["date_from"],
                date_to=options["date_to"],
                unresolved=options["unresolved"],
            )
        except quality_slice.SliceError as error:
            raise CommandError(str(error)) from None
        report = quality.judge_quality(
            judge=judge, version=version, n_boot=options["bootstrap"], versions=versions, slice=slice
        )
        selected = report.selected
        assert selected is not None
        data = {
            **selected.as_dict(),
            "language": options["language"] or None,
            "reviewer_alpha": report.reviewer_alpha,
        }
        if options["json"]:
            self.stdout.write(json.dumps(data, indent=2, ensure_ascii=False, default=str))
            return
        self._text(selected, report, options)

    def _text(self, selected: quality.VersionQuality, report: quality.JudgeQuality, options) -> None:
        out = self.stdout.write
        judge = report.judge
        out(f"{judge.slug}@{selected.version.version}" + (f" in {options['language']}" if options["language"] else ""))
        out(f"  slice: {selected.slice.describe()}; unresolved {selected.slice.unresolved}")
        scored = selected.scored
        out(
            f"  targets scored {scored.targets}, unresolved {scored.unresolved}, failed {scored.failed}, "
            f"with gold n={selected.overall.n}"
        )
        for reason, n in scored.refused.items():
            out(f"  refused {n}: {reason}")
        for rule, n in scored.conversions.items():
            out(f"  converted {n}: {rule}")
        out(f"  gold sources: {', '.join(f'{k} {v}' for k, v in selected.gold_sources.items()) or 'none'}")
        for name, r in (("all gold", selected.overall), ("disputed items", selected.disputed)):
            if r is not None:
                out(_figures(name, r))
        for convention, (n, e) in selected.accuracy.items():
            out(f"  accuracy, unresolved {convention:<8} n={n:<5} {_estimate(e)}")
        if selected.qa is not None:
            qa = selected.qa
            out(
                f"  QA sample ({qa.estimator}): accuracy {_estimate(qa.estimate)}; "
                f"{qa.missing} of {qa.sampled} sampled still need gold"
            )
        for lang, r in selected.by_language.items():
            out(_figures(lang, r, kappa=False))
        for row in selected.pass_rates:
            corrected = f"PPI {_estimate(row.ppi)}" if row.ppi else row.note
            human = f"humans {_estimate(row.human)}  " if row.human else ""
            out(f"  pass rate {row.language:<10} judge {_estimate(row.raw)}  {human}{corrected}")
        if selected.pass_rates_note:
            out(f"  pass rate: {selected.pass_rates_note}")
        runs = selected.runs
        if runs is not None and runs.rows:
            spread = runs.spread(selected.slice.unresolved)
            std = f" +- {spread.std:.4f}" if spread.std is not None else ""
            mean = f"{spread.mean:.4f}" if spread.mean is not None else "-"
            out(f"  over {spread.runs} run(s) of sweep {runs.sweep_id}: accuracy {mean}{std}")
            for row in runs.rows:
                out(
                    f"    run {row.run_index}: n={row.n} right {row.right} unresolved {row.unresolved} "
                    f"failed {row.failed}"
                )
