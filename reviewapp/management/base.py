"""What the commands about judge versions share: a `--version` flag of their own, and `--judge SLUG
[--version V]` read into one judge version."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from reviewapp.judging.services.judges import JudgeLookupError, judge_version_for
from reviewapp.models import JudgeVersion


class VersionFlagCommand(BaseCommand):
    """A command whose --version names a judge version, not Django's version: ours replaces the built-in flag."""

    def create_parser(self, prog_name, subcommand, **kwargs):
        return super().create_parser(prog_name, subcommand, conflict_handler="resolve", **kwargs)


class JudgeVersionCommand(VersionFlagCommand):
    """A command about one judge version: `--judge SLUG [--version V]`; subclasses add their own arguments
    after calling `super().add_arguments(parser)`."""

    def add_arguments(self, parser) -> None:
        parser.add_argument("--judge", required=True, help="Judge slug.")
        parser.add_argument("--version", default="", help="Version label (default: the latest).")

    def judge_version(self, options, *, runnable: bool = True) -> JudgeVersion:
        """The version --judge and --version name (see `judge_version_for`); a lookup that fails stops the command."""
        ref = options["judge"] + (f"@{options['version']}" if options["version"] else "")
        try:
            return judge_version_for(ref, runnable=runnable)
        except JudgeLookupError as exc:
            raise CommandError(str(exc)) from exc
