"""python manage.py create_api_token USERNAME --name NAME --scope SCOPE [--scope ...] [--language CODE ...]

Prints a new API token once. The token acts as USERNAME (same role and languages) within its scopes:
read-sweeps (status and gate), run-sweeps (start sweeps; leads), read-snapshots (list and download
exports; leads); `--language` limits it further to some of the user's languages. Only its sha256 is
stored: keep the printed text in the CI secret store; it cannot be shown again. `--revoke PREFIX`
revokes a token instead.
"""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from reviewapp.models import ApiToken
from reviewapp.people.services.api_tokens import SCOPES, ApiTokenError, api_token_create, api_token_revoke


class Command(BaseCommand):
    help = "Create an API token for a user and print it once (or revoke one with --revoke PREFIX)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", help="what the token is for, e.g. 'CI gate'")
        parser.add_argument("--revoke", metavar="PREFIX", help="revoke the user's token starting with PREFIX")
        parser.add_argument(
            "--scope",
            action="append",
            default=[],
            choices=SCOPES,
            help="what the token may do (repeat for several): " + ", ".join(SCOPES),
        )
        parser.add_argument(
            "--language", action="append", default=[], help="limit the token to this language (repeatable)"
        )

    def handle(self, *args, username, name, revoke, scope, language, **options):
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"No user {username!r}.")
        try:
            if revoke:
                token = ApiToken.objects.filter(user=user, prefix__startswith=revoke[:12]).first()
                if token is None:
                    raise CommandError(f"{username} has no token starting with {revoke!r}.")
                api_token_revoke(token=token)
                self.stdout.write(f"Revoked {token.name!r} ({token.prefix}...).")
                return
            if not name:
                raise CommandError("--name is required: say what the token is for.")
            if not scope:
                raise CommandError(f"--scope is required: say what the token may do ({', '.join(SCOPES)}).")
            token, raw = api_token_create(user=user, name=name, scopes=scope, languages=language)
        except ApiTokenError as exc:
            raise CommandError(str(exc)) from exc
        limits = f", languages {', '.join(token.languages)}" if token.languages else ""
        self.stderr.write(
            f"Token {token.name!r} for {username}, scopes {', '.join(token.scopes)}{limits} "
            "(shown once; only its sha256 is stored):"
        )
        self.stdout.write(raw)
