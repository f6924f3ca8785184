"""Run a rubric judge's golden examples as tests of its rendered prompt.

    python manage.py check_golden --judge SLUG [--version V] [--llm]

Each pass/fail example of each criterion is rendered into the judge's prompt and checked: the prompt
renders, carries the example verbatim, the criterion with its definition, the answer shape for every
criterion and the uncertainty fallback. With `--llm` each rendered example is also sent to the
configured endpoint (every call archived): the criterion it tests must come back as the example says
(pass or fail); an unresolved answer is reported as such and fails the check. Exits 1 when one fails.
"""

from __future__ import annotations

import sys

from django.conf import settings
from django.core.management.base import CommandError

from reviewapp.judging.services import sweeps as sweeps_service
from reviewapp.judging.services.calls import call_archive
from reviewapp.judging.services.judges import judge_version_spec
from reviewapp.management.base import JudgeVersionCommand
from scoring.parsing import parse_answer
from scoring.rubric_import import golden_cases, golden_check, golden_verdict_matches


def golden_llm_problems(version, spec, case, prompt, client) -> list[str]:
    """Send one rendered golden example; what is wrong with the answer (nothing when it matches)."""
    model = spec.model or settings.OPENAI_MODEL
    params = dict(spec.params or {})
    reply = client.complete(model=model, system=prompt.system, user=prompt.user, params=params)
    call = call_archive(
        judge_version=version,
        sweep=None,
        system=prompt.system,
        user=prompt.user,
        model=model,
        params=params,
        reply=reply,
    )
    if reply.error:
        return [f"the LLM call failed (call {call.pk}): {reply.error}"]
    result = parse_answer(spec, reply.text)
    if not result.resolved:
        return [f"unresolved answer (call {call.pk}): {result.problem or result.explanation}"]
    matches = golden_verdict_matches(case, result.sub_scores, spec)
    if matches is None:
        return [f"the answer does not score {case.criterion} (call {call.pk})"]
    if not matches:
        return [
            f"the judge says {'fail' if case.expected == 'pass' else 'pass'} on a {case.expected} example (call {call.pk})"
        ]
    return []


class Command(JudgeVersionCommand):
    help = "Render each golden example of a rubric judge into its prompt and check it; exit 1 on a failure."

    def add_arguments(self, parser):
        super().add_arguments(parser)
        parser.add_argument(
            "--llm", action="store_true", help="Also send each example to the LLM and check its answer."
        )

    def handle(self, *args, **options):
        version = self.judge_version(options)
        spec = judge_version_spec(version)
        cases = golden_cases(spec)
        if not cases:
            raise CommandError(f"{spec.key} has no golden example.")
        client = None
        if options["llm"]:
            client = sweeps_service.llm_client()
            if client is None:
                raise CommandError("--llm needs an LLM endpoint: set OPENAI_BASE_URL (and OPENAI_API_KEY).")
        failed = 0
        for case in cases:
            check = golden_check(spec, case)
            problems = list(check.problems)
            if client is not None and check.prompt is not None:
                problems.extend(golden_llm_problems(version, spec, case, check.prompt, client))
            state = "ok  " if not problems else "FAIL"
            self.stdout.write(f"{state} {case.criterion} [{case.expected}] {case.text[:70]}")
            for problem in problems:
                self.stdout.write(f"       {problem}")
            failed += bool(problems)
        self.stdout.write(f"{len(cases) - failed} of {len(cases)} golden examples pass.")
        if failed:
            sys.exit(1)
