"""Label Studio's side of bench/compare.py: the same workload and operations through its own API.

Label Studio runs from its own virtualenv (never this repository's): `label-studio start` (its Django
runserver on SQLite) in a fresh data folder, on loopback only, with analytics, the version check and
error reporting off (COLLECT_ANALYTICS, LATEST_VERSION_CHECK, SENTRY_DSN, FRONTEND_SENTRY_DSN) and
DEBUG off like Tribunal. The legacy token is enabled so a fixed API token can drive it.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import time
from pathlib import Path

from bench import _workload as workload
from bench._http import Http, child, free_port, stop, wait_until_up

PAGE_SIZE = 50  # Tribunal's queue page
IMPORT_CHUNK = 5000


def environment(data_dir: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_", "TRIBUNAL_"))}
    env.pop("PYTHONPATH", None)
    env |= {
        "LABEL_STUDIO_BASE_DATA_DIR": str(data_dir),
        "COLLECT_ANALYTICS": "false",
        "LATEST_VERSION_CHECK": "false",
        "SENTRY_DSN": "",
        "FRONTEND_SENTRY_DSN": "",
        "DEBUG": "false",
        "LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN": "true",
        "LOG_LEVEL": "WARNING",
    }
    return env


def peak_rss_mib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return round(int(line.split()[1]) / 1024)
    return 0


def median(samples: list[float]) -> float:
    samples = sorted(samples)
    middle = len(samples) // 2
    return round(samples[middle] if len(samples) % 2 else (samples[middle - 1] + samples[middle]) / 2, 1)


def bench(venv: Path, data_dir: Path, args) -> dict[str, float]:
    print(f"== Label Studio: {args.size:,} tasks through its API", flush=True)
    env = environment(data_dir)
    token = secrets.token_hex(20)
    port = free_port()
    command = [str(venv / "bin" / "label-studio"), "start", "--no-browser", "--internal-host", "127.0.0.1"]
    command += ["--port", str(port), "--data-dir", str(data_dir), "--username", "bench@example.com"]
    command += ["--password", secrets.token_hex(8), "--user-token", token, "--enable-legacy-api-token"]
    started = time.perf_counter()
    log = (data_dir / "server.log").open("w")
    process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, cwd=data_dir)
    figures: dict[str, float] = {}
    try:
        figures["first_page"] = round((wait_until_up(port, "/health", process, limit=600) - started) * 1000)
        api = Http(port, headers={"Authorization": f"Token {token}"})
        api.server_pid = process.pid
        project = api.json("POST", "/api/projects", {"title": "bench", "label_config": workload.LS_LABEL_CONFIG})
        pid = project["id"]
        started = time.perf_counter()
        for start in range(0, args.size, IMPORT_CHUNK):
            tasks = [workload.ls_task(i) for i in range(start, min(args.size, start + IMPORT_CHUNK))]
            api.json("POST", f"/api/projects/{pid}/import", tasks)
        seconds = time.perf_counter() - started
        figures["import"] = round(args.size / seconds)
        figures["import_turns"] = round(args.size * workload.MESSAGES / seconds)
        figures["import_rss"] = peak_rss_mib(process.pid)
        print(f"   imported in {seconds:.0f} s", flush=True)
        figures |= operations(api, pid, args)
        started = time.perf_counter()
        status, _, body, _ = api.request("GET", f"/api/projects/{pid}/export?exportType=JSON&download_all_tasks=true")
        assert status == 200, status
        figures["export"] = round(time.perf_counter() - started, 1)
        print(f"   export: {len(body) / 2**20:.0f} MiB in {figures['export']} s", flush=True)
    finally:
        stop(process)
        log.close()
    manage = next(venv.glob("lib/python*/site-packages/label_studio/manage.py"))
    checks = [child([str(venv / "bin" / "python"), str(manage), "check"], env)[1] * 1000 for _ in range(5)]
    figures["check"] = median(checks)
    print(f"   {figures}", flush=True)
    return figures


def operations(api: Http, pid: int, args) -> dict[str, float]:
    """Median wall ms of each operation, and the server's mean CPU ms per request under "<operation>_cpu"."""
    times: dict[str, list[float]] = {key: [] for key in ("queue", "middle", "filtered", "after_labels")}
    times |= {"review": [], "claim": [], "submit": []}
    cpu: dict[str, list[float]] = {key: [] for key in times}

    def call(key: str, method: str, path: str, body=None, expect: int = 200) -> bytes:
        status, _, data, ms = api.request(method, path, body=body)
        assert status == expect, (method, path, status, data[:300])
        times[key].append(ms)
        cpu[key].append(api.last_cpu_ms)
        return data

    middle = max(1, args.size // PAGE_SIZE // 2)
    judge_failed = {
        "filter": "filter:tasks:data.judge_failed",
        "operator": "equal",
        "type": "Boolean",
        "value": True,
    }
    view = api.json(
        "POST", "/api/dm/views", {"project": pid, "data": {"filters": {"conjunction": "and", "items": [judge_failed]}}}
    )
    listing = f"/api/tasks?project={pid}&page_size={PAGE_SIZE}"
    filtered = f"{listing}&view={view['id']}&page=1"
    print(f"   filtered list holds {api.json('GET', filtered).get('total')} of {args.size} tasks", flush=True)
    for key, path in (("queue", f"{listing}&page=1"), ("middle", f"{listing}&page={middle}"), ("filtered", filtered)):
        for _ in range(args.repeats):
            call(key, "GET", path)
    result = [
        {"from_name": "agree", "to_name": "dialogue", "type": "choices", "value": {"choices": ["agree"]}},
        {"from_name": "passed", "to_name": "dialogue", "type": "choices", "value": {"choices": ["pass"]}},
        {"from_name": "comment", "to_name": "dialogue", "type": "textarea", "value": {"text": ["Looks right."]}},
    ]
    for _ in range(args.repeats):
        task = json.loads(call("claim", "GET", f"/api/projects/{pid}/next"))["id"]
        call("review", "GET", f"/api/tasks/{task}?project={pid}")
        annotation = {"result": result, "lead_time": 40}
        call("submit", "POST", f"/api/tasks/{task}/annotations?project={pid}", body=annotation, expect=201)
    for _ in range(args.repeats):
        call("after_labels", "GET", f"{listing}&page=1")
    figures = {key: median(value) for key, value in times.items()}
    return figures | {f"{key}_cpu": round(sum(value) / len(value), 1) for key, value in cpu.items()}
