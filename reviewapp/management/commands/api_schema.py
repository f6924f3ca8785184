"""Write docs/api/openapi.yaml from the API's code, or check that the committed file matches it."""

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from reviewapp.api.site import openapi_yaml

DEFAULT_PATH = Path(settings.BASE_DIR) / "docs" / "api" / "openapi.yaml"


class Command(BaseCommand):
    help = "Write the OpenAPI document of /api/v1 (docs/api/openapi.yaml) from the code; --check only compares."

    def add_arguments(self, parser):
        parser.add_argument("--output", type=Path, default=DEFAULT_PATH, help="Where to write (default: %(default)s).")
        parser.add_argument(
            "--check", action="store_true", help="Write nothing; fail when the file differs from the code."
        )

    def handle(self, *args, output: Path, check: bool, **options):
        text = openapi_yaml()
        if check:
            current = output.read_text(encoding="utf-8") if output.is_file() else ""
            if current != text:
                raise CommandError(f"{output} is not what the API's code describes: run `manage.py api_schema`.")
            self.stderr.write(f"{output} matches the code.")
            return
        output.parent.mkdir(parents=True, exist_ok=True)
        output.write_text(text, encoding="utf-8")
        self.stderr.write(f"Wrote {output}.")
