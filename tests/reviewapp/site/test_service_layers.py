"""Services never import tasks: the caller (view, command, task) hands a service the function that queues work."""

import ast
from pathlib import Path

APP = Path(__file__).resolve().parents[3] / "reviewapp"
# Every stage keeps its writes in its own services/ package.
SERVICES = sorted(APP.glob("*/services"))


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
    }
    assert {name: found for name, found in offenders.items() if found} == {}


def test_the_check_sees_a_task_import(tmp_path):
    assert len(SERVICES) >= 8  # corpus, judging, triage, review, adjudication, quality, exports, people
    offender = tmp_path / "offender.py"
    offender.write_text("def f():\n    from reviewapp.judging.tasks.signatures import signatures_recheck_all\n")
    assert _task_imports(offender) == ["reviewapp.judging.tasks.signatures"]  # the check is not blind
