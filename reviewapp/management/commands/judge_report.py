"""Judge quality on the command line: the numbers of the judge quality page.

    python manage.py judge_report --judge SLUG [--version V] [--language CODE] [--json] [--bootstrap N]

Without --version the latest version is reported. JSON keys: judge, version, language, n, targets,
unresolved, accuracy, macro_f1, kappa (each {value, low, high}: a 95% bootstrap interval),
per_class_f1, confusion, labels, by_language, qa_weighted, qa_unweighted, disputed, runs_accuracy,
runs_macro_f1, gold_sources, reviewer_alpha.
"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from reviewapp.models import Judge
from reviewapp.selectors import quality
from scoring.agreement import DEFAULT_BOOTSTRAP, Estimate


def _estimate(e: Estimate) -> str:
    if e.value is None:
        return "-"
    if e.low is None:
        return f"{e.value:.3f}"
    return f"{e.value:.3f} [{e.low:.3f}, {e.high:.3f}]"


class Command(BaseCommand):
    help = "Accuracy, macro-F1 and Cohen's kappa (with 95% bootstrap intervals) of a judge version against gold."

    def create_parser(self, prog_name, subcommand, **kwargs):
        # --version names a judge version here, not Django's version: let ours replace the built-in flag.
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)

    def add_arguments(self, parser) -> None:
        parser.add_argument("--judge", required=True, help="Judge slug.")
        parser.add_argument("--version", default="", help="Version label (default: the latest).")
        parser.add_argument("--language", default="", help="Only this language (BCP 47 code).")
        parser.add_argument("--json", action="store_true", help="Print JSON.")
        parser.add_argument("--bootstrap", type=int, default=DEFAULT_BOOTSTRAP, help="Bootstrap resamples.")

    def handle(self, *args, **options) -> None:
        try:
            judge = Judge.objects.get(slug=options["judge"])
        except Judge.DoesNotExist:
            raise CommandError(f"No judge {options['judge']!r}.") from None
        versions = quality.judge_versions(judge=judge)
        version = None
        if options["version"]:
            version = next((v for v in versions if v.version == options["version"]), None)
            if version is None:
                known = ", ".join(v.version for v in versions) or "none"
                raise CommandError(f"{judge.slug} has no version {options['version']!r} (known: {known}).")
        elif not versions:
            raise CommandError(f"{judge.slug} has no version yet.")
        report = quality.judge_quality(
            judge=judge, version=version, language=options["language"], n_boot=options["bootstrap"], versions=versions
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
        out = self.stdout.write
        out(f"{judge.slug}@{selected.version.version}" + (f" in {options['language']}" if options["language"] else ""))
        out(f"  targets scored {selected.targets}, unresolved {selected.unresolved}, with gold n={selected.overall.n}")
        out(f"  gold sources: {', '.join(f'{k} {v}' for k, v in selected.gold_sources.items()) or 'none'}")
        for name, r in (
            ("all gold", selected.overall),
            ("QA sample, weighted", selected.qa_weighted),
            ("disputed items", selected.disputed),
        ):
            if r is None:
                continue
            out(
                f"  {name:<20} n={r.n:<5} accuracy {_estimate(r.accuracy)}  macro-F1 {_estimate(r.macro_f1)}"
                f"  kappa {_estimate(r.kappa)}"
            )
        for lang, r in selected.by_language.items():
            out(f"  {lang:<20} n={r.n:<5} accuracy {_estimate(r.accuracy)}  macro-F1 {_estimate(r.macro_f1)}")
        spread = selected.runs_accuracy
        if spread and spread.mean is not None:
            std = f" +- {spread.std:.3f}" if spread.std is not None else ""
            out(f"  over {spread.runs} run(s): accuracy {spread.mean:.3f}{std}")
