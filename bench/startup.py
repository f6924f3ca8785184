"""How long a command takes to start: `manage.py check`, `help`, `showmigrations`, `migrate --check`, and
`migrate` on a fresh SQLite database followed by the server's first page (`runserver --noreload`, from its
start to its first answer to /login/). The target is under 1 s for a command and under 3 s for the fresh
database and its first page.

Each figure is the median of --repeats runs: wall time and CPU time (user + system of the child, from
wait4), CPU being the steadier of the two on a machine shared with other work. Each tree's sources are
compiled to bytecode first (as a deployment keeps them), so that a tree compiled from source at each start
(PYTHONDONTWRITEBYTECODE=1 and no __pycache__, as a fresh copy is) is not timed as slower. Give --trees a second
checkout (say `git archive main | tar -x -C /tmp/main`) to compare it with this one: the runs alternate
between the trees, so both see the same load; every tree runs with this checkout's Python.

    PYTHONPATH=. .venv/bin/python bench/startup.py
    PYTHONPATH=. .venv/bin/python bench/startup.py --trees /tmp/main . --repeats 9
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench._http import free_port, stop, wait_until_up

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = {
    "check": ["check"],
    "help": ["help"],
    "showmigrations": ["showmigrations"],
    "migrate --check": ["migrate", "--check"],
}


def tree_env(tree: Path, var: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in ("DATABASE_URL", "CELERY_BROKER_URL")}
    env.update(
        DATABASE_URL=f"sqlite:///{var / 'db.sqlite3'}",
        TRIBUNAL_VAR_DIR=str(var),
        DJANGO_SETTINGS_MODULE="reviewapp.settings",
        PYTHONPATH=str(tree),
    )
    return env


def timed(command: list[str], tree: Path, env: dict[str, str]) -> tuple[float, float]:
    """Run a child to its end: (wall seconds, CPU seconds)."""
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    error = process.stderr.read().decode() if process.stderr else ""
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{' '.join(command)} in {tree} failed:\n{error[-3000:]}")
    return wall, usage.ru_utime + usage.ru_stime


def fresh_start(tree: Path, var: Path) -> tuple[float, float, float]:
    """migrate on a database that does not exist yet, then the server's first page: (migrate wall, migrate
    CPU, server start to first page), in seconds."""
    for suffix in ("", "-wal", "-shm"):
        Path(f"{var / 'db.sqlite3'}{suffix}").unlink(missing_ok=True)
    env = tree_env(tree, var)
    migrate_wall, migrate_cpu = timed([sys.executable, "manage.py", "migrate", "-v0"], tree, env)
    port = free_port()
    started = time.perf_counter()
    server = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", "--noreload", f"127.0.0.1:{port}"],
        cwd=tree,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        first_page = wait_until_up(port, "/login/", server) - started
    finally:
        stop(server)
    return migrate_wall, migrate_cpu, first_page


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trees", nargs="+", type=Path, default=[ROOT], help="checkouts to time (default: this one)")
    parser.add_argument("--repeats", type=int, default=5, help="runs of each command per tree (default: 5)")
    parser.add_argument(
        "--commands", nargs="+", choices=[*COMMANDS, "fresh"], default=[*COMMANDS, "fresh"], help="what to time"
    )
    args = parser.parse_args()
    trees = [tree.resolve() for tree in args.trees]
    figures: dict[tuple[str, Path], list[tuple[float, ...]]] = {}
    with tempfile.TemporaryDirectory(prefix="tribunal-startup-") as scratch:
        vars_ = {tree: Path(scratch) / str(n) for n, tree in enumerate(trees)}
        for tree, var in vars_.items():
            (var / "fresh").mkdir(parents=True)
            timed(
                [sys.executable, "-m", "compileall", "-q", "manage.py", "reviewapp", "scoring"], tree, os.environ.copy()
            )
            timed([sys.executable, "manage.py", "migrate", "-v0"], tree, tree_env(tree, var))
        for _ in range(args.repeats):
            for name in args.commands:
                for tree in trees:
                    if name == "fresh":
                        figure = fresh_start(tree, vars_[tree] / "fresh")
                    else:
                        command = [sys.executable, "manage.py", *COMMANDS[name]]
                        figure = timed(command, tree, tree_env(tree, vars_[tree]))
                    figures.setdefault((name, tree), []).append(figure)
    load = os.getloadavg()[0]
    print(f"medians of {args.repeats} runs, in ms; load average (1 min) at the end {load:.1f}, {os.cpu_count()} CPUs")
    print("| command | tree | wall | CPU |")
    print("|---|---|---|---|")
    for (name, tree), runs in figures.items():
        medians = [round(statistics.median(column) * 1000) for column in zip(*runs, strict=True)]
        if name == "fresh":
            print(f"| migrate, fresh SQLite | {tree} | {medians[0]:,} | {medians[1]:,} |")
            print(f"| then server start to first page | {tree} | {medians[2]:,} | |")
            print(f"| fresh database to first page | {tree} | {medians[0] + medians[2]:,} | |")
        else:
            print(f"| {name} | {tree} | {medians[0]:,} | {medians[1]:,} |")


if __name__ == "__main__":
    main()
