"""Start a sweep from the command line and follow it until it is done.

    python manage.py sweep --dataset NAME --judge SLUG[@VERSION] [--judge ...] [--repeats N]
        [--variance-sample 0.1] [--qa-sample 0.05] [--language CODE] [--wait/--no-wait] [--eager]
        [--scope commented|gold|moved:A,B [--category SLUG]] [--eva-agent PATH] [--eva-dataset PATH]

`--scope` re-scores only what people looked at: the turns (or conversations) reviewers commented
on, optionally with one comment category; the gold-labelled targets; or the targets whose outcome
moved between versions A and B of the swept judge. `--eva-agent` reads an EVA agent config
(configs/agents/*.yaml: role, instructions, tools) for the EVA judges that need it (faithfulness);
`--eva-dataset` reads EVA's dataset file (data/*_dataset.json) for what each record's scenario holds
(current_date_time), matched by record id.

Workers run the sweep (`celery -A reviewapp worker`); `--eager` runs it in this process instead.
Progress goes to stderr (a bar on a terminal, a line every few seconds otherwise); the last line
on stdout is one JSON object: sweep, status, verdicts, tier1_resolved, escalated, unresolved, failed.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from pathlib import Path

import yaml
from django.core.management.base import BaseCommand, CommandError
from django.db import close_old_connections, connection

from reviewapp.judging.services import judge_inputs, judges, sweep_scope
from reviewapp.judging.services import sweeps as sweeps_service
from reviewapp.judging.services.rubrics import variance_check_params
from reviewapp.judging.tasks.sweeps import sweep_queue
from reviewapp.models import Dataset, Sweep
from scoring import eva_variables

BAR_WIDTH = 30
LINE_EVERY_S = 5.0


def result_line(sweep: Sweep) -> str:
    return json.dumps(
        {
            "sweep": sweep.pk,
            "status": sweep.status,
            "verdicts": sweep.verdicts_written,
            "tier1_resolved": sweep.tier1_resolved,
            "escalated": sweep.escalated,
            "unresolved": sweep.unresolved,
            "failed": sweep.failed,
        }
    )


class Command(BaseCommand):
    help = "Start a sweep of a dataset with judge versions and follow its progress."

    def add_arguments(self, parser):
        parser.add_argument("--dataset", required=True, help="Dataset name.")
        parser.add_argument(
            "--judge", action="append", required=True, dest="judges", help="SLUG or SLUG@VERSION; repeatable."
        )
        parser.add_argument(
            "--repeats", type=int, default=None, help="LLM runs per sampled target (default 1, or the rubric's check)."
        )
        parser.add_argument(
            "--variance-sample", type=float, default=None, help="Share of targets run `repeats` times (default 0.1)."
        )
        parser.add_argument("--qa-sample", type=float, default=0.05, help="Share of resolved items sent to QA review.")
        parser.add_argument("--language", default="", help="Only conversations in this language (fr covers fr-CA).")
        parser.add_argument("--wait", action="store_true", default=True, help="Follow the sweep until done (default).")
        parser.add_argument("--no-wait", action="store_false", dest="wait", help="Start the sweep and return at once.")
        parser.add_argument("--eager", action="store_true", help="Run the sweep in this process, without workers.")
        parser.add_argument("--timeout", type=float, default=0, help="Stop waiting after this many seconds (0: never).")
        parser.add_argument("--scope", default="", help="commented, gold or moved:A,B (default: every target).")
        parser.add_argument("--category", default="", help="With --scope commented: only comments with this category.")
        parser.add_argument(
            "--eva-agent", default="", help="An EVA agent config (YAML) for agent_role/instructions/tools."
        )
        parser.add_argument(
            "--eva-dataset", default="", help="EVA's dataset file (JSON) for each record's current_date_time."
        )

    def handle(self, *args, **options):
        dataset = Dataset.objects.filter(name=options["dataset"]).first()
        if dataset is None:
            raise CommandError(f"No dataset named {options['dataset']!r}.")
        try:
            versions = [judges.judge_version_for(ref) for ref in options["judges"]]
        except judges.JudgeLookupError as exc:
            raise CommandError(str(exc)) from exc
        try:
            scope = sweep_scope.scope_parse(options["scope"], category=options["category"])
        except sweep_scope.ScopeError as exc:
            raise CommandError(str(exc)) from exc
        variables = _agent_variables(options["eva_agent"]) if options["eva_agent"] else {}
        if options["eva_dataset"]:
            variables[judge_inputs.BY_RECORD] = _dataset_variables(options["eva_dataset"])
        eager = options["eager"]
        check = variance_check_params(versions).get("variance_check", {})
        repeats = options["repeats"] if options["repeats"] is not None else int(check.get("repeats", 1))
        sample = options["variance_sample"]
        sample = sample if sample is not None else float(check.get("sample_rate", 0.1))
        try:
            sweep = sweeps_service.sweep_start(
                dataset=dataset,
                judge_versions=versions,
                repeats=repeats,
                variance_sample=sample,
                qa_sample=options["qa_sample"],
                language=options["language"],
                dispatch=None if eager else sweep_queue,
                scope=scope,
                variables=variables or None,
            )
        except sweeps_service.SweepError as exc:
            raise CommandError(str(exc)) from exc
        self.stderr.write(
            f"Sweep {sweep.pk}: {sweep.total_targets} target(s) x judge version(s), code {sweep.code_version or '?'}"
        )

        runner = None
        if eager:
            runner = threading.Thread(target=_run_in_process, args=(sweep.pk,), name="sweep-eager", daemon=True)
            runner.start()
        elif not options["wait"]:
            self.stdout.write(result_line(sweep))
            return
        sweep = self._follow(sweep.pk, timeout=options["timeout"], runner=runner)
        self.stdout.write(result_line(sweep))
        if sweep.status != Sweep.Status.DONE:
            sys.exit(1)

    def _follow(self, sweep_id: int, *, timeout: float, runner: threading.Thread | None) -> Sweep:
        tty = self.stderr.isatty()
        started = time.monotonic()
        last_line = 0.0
        last_finalize = started
        while True:
            sweep = Sweep.objects.get(pk=sweep_id)
            now = time.monotonic()
            # Chunks recompute the counters as they finish; a periodic recount here closes a sweep
            # whose last chunk ended without it (and shows progress between chunks).
            if sweep.status in (Sweep.Status.PENDING, Sweep.Status.RUNNING) and now - last_finalize > 5:
                sweep = sweeps_service.sweep_finalize(sweep_id=sweep_id)
                last_finalize = now
            finished = sweep.status not in (Sweep.Status.PENDING, Sweep.Status.RUNNING)
            if runner is not None and not runner.is_alive() and not finished:
                sweep = sweeps_service.sweep_finalize(sweep_id=sweep_id)
                finished = True
            if tty:
                self.stderr.write("\r" + _bar(sweep), ending="")
                self.stderr.flush()
            elif finished or now - last_line >= LINE_EVERY_S:
                self.stderr.write(_line(sweep, now - started))
                last_line = now
            if finished:
                if tty:
                    self.stderr.write("")
                return sweep
            if timeout and now - started > timeout:
                if tty:
                    self.stderr.write("")
                self.stderr.write(f"Stopped waiting after {timeout:g}s; sweep {sweep_id} is still {sweep.status}.")
                return sweep
            time.sleep(0.5)


def _agent_variables(path: str) -> dict[str, str]:
    try:
        data = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise CommandError(f"--eva-agent {path}: cannot read it: {exc}") from exc
    if not isinstance(data, dict):
        raise CommandError(f"--eva-agent {path}: expected a mapping with role, instructions and tools")
    variables = eva_variables.agent_variables(data)
    if not variables:
        raise CommandError(f"--eva-agent {path}: no role, instructions or tools in it")
    return variables


def _dataset_variables(path: str) -> dict:
    try:
        return eva_variables.dataset_variables(json.loads(Path(path).read_text(encoding="utf-8")))
    except (OSError, ValueError) as exc:
        raise CommandError(f"--eva-dataset {path}: {exc}") from exc


def _run_in_process(sweep_id: int) -> None:
    from reviewapp.celery import app
    from reviewapp.judging.tasks.sweeps import sweep_dispatch

    app.conf.task_always_eager = True
    app.conf.task_eager_propagates = True
    try:
        sweep_dispatch.apply(args=[sweep_id], throw=False)
    finally:
        close_old_connections()
        connection.close()


def _expected(sweep: Sweep) -> int:
    return int(sweep.params.get("expected_verdicts") or 0) or sweep.total_targets or 1


def _bar(sweep: Sweep) -> str:
    expected = _expected(sweep)
    share = 1.0 if sweep.status == Sweep.Status.DONE else min(1.0, sweep.verdicts_written / expected)
    filled = round(BAR_WIDTH * share)
    return (
        f"[{'#' * filled}{'.' * (BAR_WIDTH - filled)}] {share:4.0%} {sweep.verdicts_written}/{expected} verdicts"
        f" | tier1 {sweep.tier1_resolved} escalated {sweep.escalated} unresolved {sweep.unresolved}"
        f" failed {sweep.failed} | {sweep.status}  "
    )


def _line(sweep: Sweep, elapsed: float) -> str:
    expected = _expected(sweep)
    return (
        f"[{elapsed:6.1f}s] sweep {sweep.pk} {sweep.status}: {sweep.verdicts_written}/{expected} verdicts,"
        f" tier1 {sweep.tier1_resolved}, escalated {sweep.escalated}, unresolved {sweep.unresolved},"
        f" failed {sweep.failed}"
    )
