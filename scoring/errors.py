"""The root of every error Tribunal raises on purpose.

Each module keeps its own error class (`SweepError`, `ReviewError`, `SpecError`, ...), named for what
went wrong, and every one of them is a `TribunalError`: a caller that wants "anything Tribunal refused"
catches this one class, and a stray `ValueError` from a library is never mistaken for a refusal. The
classes that were `ValueError`s (or `KeyError`, `TimeoutError`) before still are, so existing handlers
keep working.
"""

from __future__ import annotations


class TribunalError(Exception):
    """Something Tribunal refused or could not do, with a message meant for the person who asked."""
