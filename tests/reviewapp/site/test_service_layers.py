"""Services never import tasks: the caller (view, command, task) hands a service the function that queues work."""

import ast
from pathlib import Path

APP = Path(__file__).resolve().parents[3] / "reviewapp"
# Every stage keeps its writes in its own services/ package.
SERVICES = sorted(APP.glob("*/services"))
# Still importing its task, named here so the list only shrinks: signatures_after_gold (signature_checks.py)
# queues the recheck of a judge's signatures when new gold arrives.
NOT_YET_INVERTED = {"signature_checks.py"}


def _task_imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            module = ("." * node.level) + (node.module or "")
            names = [alias.name for alias in node.names]
            if "tasks" in module.split(".") or (module.strip(".") in ("reviewapp", "") and "tasks" in names):
                found.append(module)
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names if "tasks" in alias.name.split(".")]
    return found


def test_no_service_imports_a_task():
    offenders = {
        str(path.relative_to(APP)): _task_imports(path)
        for services in SERVICES
        for path in sorted(services.rglob("*.py"))
        if path.name not in NOT_YET_INVERTED
    }
    assert {name: found for name, found in offenders.items() if found} == {}


def test_the_check_sees_a_task_import():
    assert len(SERVICES) >= 8  # corpus, judging, triage, review, adjudication, quality, exports, people
    assert _task_imports(APP / "judging" / "services" / "signature_checks.py")  # the one left: the check is not blind
