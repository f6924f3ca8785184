"""The code version every sweep and export snapshot records, so a result can be traced to its code."""

from __future__ import annotations

import functools
import subprocess

from django.conf import settings

UNKNOWN = "unknown"


@functools.cache
def _git_head() -> str:
    """The checkout's commit, asked once per process (the code does not change under a running process)."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],  # noqa: S607
            cwd=settings.BASE_DIR,
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip()[:64] if out.returncode == 0 else ""


def code_version() -> str:
    """TRIBUNAL_CODE_VERSION when set (deployments without .git), else the git SHA, else "unknown"."""
    if settings.TRIBUNAL_CODE_VERSION:
        return settings.TRIBUNAL_CODE_VERSION[:64]
    return _git_head() or UNKNOWN
