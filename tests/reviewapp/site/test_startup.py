"""A process that serves pages or runs a command does not load the heavy libraries until it uses them."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
HEAVY = ("scipy", "sklearn", "pandas", "openai", "statsmodels", "ppi_py", "pyarrow", "krippendorff", "numpy")

PROBE = """
import json, sys
import django
from django.core.management import call_command
django.setup()
from django.urls import get_resolver
get_resolver().url_patterns  # imports every view, selector and service the site routes to
call_command("check", verbosity=0)
# A module imported lazily (scoring.lazy) is in sys.modules before it has run: that one is not loaded.
print(json.dumps(sorted(
    name for name, module in sys.modules.items()
    if name.split(".")[0] in HEAVY and type(module).__name__ != "_LazyModule"
)))
"""


def test_loading_the_site_and_running_check_imports_no_heavy_library():
    env_code = f"HEAVY = {HEAVY!r}\n" + PROBE
    result = subprocess.run(
        [sys.executable, "-c", env_code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        env={"DJANGO_SETTINGS_MODULE": "reviewapp.settings", "PATH": "/usr/bin:/bin"},
    )
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    assert loaded == []
