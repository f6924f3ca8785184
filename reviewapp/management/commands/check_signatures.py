"""Check every active tier-1 signature against the gold-labelled turns of its judge and language.

    python manage.py check_signatures [--judge SLUG] [--language CODE] [--no-suspend]

Prints matches, agreement with gold, precision and its 95% Wilson interval per signature. A
signature below TRIBUNAL_SIGNATURE_PRECISION_FLOOR on at least TRIBUNAL_SIGNATURE_MIN_GOLD
compared matches is suspended (sweeps stop using it) unless --no-suspend is given. Exits non-zero
when a signature contradicts gold anywhere, listing the turns.
"""

from django.core.management.base import BaseCommand, CommandError

from reviewapp.judging.services.signature_checks import signature_check_all, signature_suspend
from reviewapp.models import Signature


class Command(BaseCommand):
    help = "Measure each active signature's precision on gold; suspend those below the floor; fail on a contradiction."

    def add_arguments(self, parser):
        parser.add_argument("--judge", help="Only this judge (slug).")
        parser.add_argument("--language", help="Only signatures in this language.")
        parser.add_argument("--no-suspend", action="store_true", help="Report only; suspend nothing.")

    def handle(self, *args, judge=None, language=None, no_suspend=False, **options):
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
            f"{'signature':<10} {'judge':<20} {'lang':<6} {'intent':<14} {'matches':>7} {'agree':>6} "
            f"{'precision':>9} {'95% Wilson':>13}  state"
        )
        failing = []
        for check in checks:
            sig = check.signature
            gold = check.gold
            precision = "-" if gold.precision is None else f"{gold.precision:.3f}"
            interval = "-" if gold.low is None else f"{gold.low:.3f}-{gold.high:.3f}"
            state = "suspended" if sig.suspended_at else "active"
            if check.below_floor and sig.suspended_at is None and not no_suspend:
                signature_suspend(signature=sig, check=check)
                state = "suspended now"
            self.stdout.write(
                f"{sig.pk:<10} {sig.judge.slug:<20} {sig.language:<6} {sig.intent[:14]:<14} "
                f"{check.matches:>7} {check.agreeing:>6} {precision:>9} {interval:>13}  {state}"
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
