"""python manage.py create_api_token USERNAME --name NAME: print a new API token once.

The token acts as USERNAME (same role and languages). Only its sha256 is stored: keep the printed
text in the CI secret store; it cannot be shown again. `--revoke PREFIX` revokes a token instead.
"""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from reviewapp.models import ApiToken
from reviewapp.services.api_tokens import ApiTokenError, api_token_create, api_token_revoke


class Command(BaseCommand):
    help = "Create an API token for a user and print it once (or revoke one with --revoke PREFIX)."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", help="what the token is for, e.g. 'CI gate'")
        parser.add_argument("--revoke", metavar="PREFIX", help="revoke the user's token starting with PREFIX")

    def handle(self, *args, username, name, revoke, **options):
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
            token, raw = api_token_create(user=user, name=name)
        except ApiTokenError as exc:
            raise CommandError(str(exc)) from exc
        self.stderr.write(f"Token {token.name!r} for {username} (shown once; only its sha256 is stored):")
        self.stdout.write(raw)
