"""Check every active tier-1 signature against the gold-labelled turns of its judge and language.

    python manage.py check_signatures [--judge SLUG] [--language CODE]

Prints matches, agreement with gold and precision per signature; exits non-zero when a
signature contradicts gold, listing the turns.
"""

from django.core.management.base import BaseCommand, CommandError

from ...models import Signature
from ...services.signatures import signature_check_all


class Command(BaseCommand):
    help = "Measure each active signature's precision on gold labels; fail when one contradicts gold."

    def add_arguments(self, parser):
        parser.add_argument("--judge", help="Only this judge (slug).")
        parser.add_argument("--language", help="Only signatures in this language.")

    def handle(self, *args, judge=None, language=None, **options):
        signatures = (
            Signature.objects.filter(active=True).select_related("judge").order_by("judge__slug", "language", "id")
        )
        if judge:
            signatures = signatures.filter(judge__slug=judge)
        if language:
            signatures = signatures.filter(language__iexact=language)
        checks = signature_check_all(signatures)
        if not checks:
            self.stdout.write("no active signature")
            return
        self.stdout.write(
            f"{'signature':<10} {'judge':<20} {'lang':<6} {'intent':<14} {'matches':>7} {'agree':>6} {'precision':>9}"
        )
        failing = []
        for check in checks:
            sig = check.signature
            precision = "-" if check.precision is None else f"{check.precision:.3f}"
            self.stdout.write(
                f"{sig.pk:<10} {sig.judge.slug:<20} {sig.language:<6} {sig.intent[:14]:<14} "
                f"{check.matches:>7} {check.agreeing:>6} {precision:>9}"
            )
            if check.contradicting_turns:
                failing.append(check)
        if failing:
            details = [
                f"signature {c.signature.pk} ({c.signature.judge.slug}/{c.signature.language} {c.signature.intent!r}) "
                f"contradicts gold on turn(s) {', '.join(str(t) for t in c.contradicting_turns)}"
                for c in failing
            ]
            raise CommandError("\n".join(details))
        self.stdout.write(self.style.SUCCESS(f"{len(checks)} signature(s) agree with gold wherever they match"))
