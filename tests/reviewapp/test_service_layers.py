"""Services never import tasks: the caller (view, command, task) hands a service the function that queues work."""

import ast
from pathlib import Path

SERVICES = Path(__file__).resolve().parents[2] / "reviewapp" / "services"
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
            found += [alias.name for alias in node.names if alias.name.startswith("reviewapp.tasks")]
    return found


def test_no_service_imports_a_task():
    offenders = {
        str(path.relative_to(SERVICES)): _task_imports(path)
        for path in sorted(SERVICES.rglob("*.py"))
        if path.name not in NOT_YET_INVERTED
    }
    assert {name: found for name, found in offenders.items() if found} == {}


def test_the_check_sees_a_task_import():
    assert _task_imports(SERVICES / "signature_checks.py")  # the one left: the check is not blind
