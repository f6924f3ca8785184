"""HTTP and process helpers for bench/compare.py: a client that opens a new connection per request."""

from __future__ import annotations

import http.client
import json
import os
import secrets
import socket
import subprocess
import tempfile
import time
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parents[1]


class Http:
    """Cookies and headers kept between requests; a fresh TCP connection for every request."""

    def __init__(self, port: int, headers: dict[str, str] | None = None, cookies: dict[str, str] | None = None):
        self.port = port
        self.headers = headers or {}
        self.cookies = dict(cookies or {})
        # When set: the CPU the server's processes spent on each request (last_cpu_ms). On a machine
        # shared with other work, CPU per request is steadier than wall time.
        self.server_pid: int | None = None
        self.last_cpu_ms = 0.0

    @classmethod
    def tribunal(cls, port: int, session: str) -> Http:
        """A logged-in Tribunal client: its session cookie, and a CSRF secret of its own in cookie and header."""
        csrf = secrets.token_hex(16)
        return cls(port, headers={"X-CSRFToken": csrf}, cookies={"sessionid": session, "csrftoken": csrf})

    def request(self, method: str, path: str, *, form=None, body=None, timeout: float = 600):
        headers = {"Connection": "close", "Host": f"127.0.0.1:{self.port}", **self.headers}
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        payload = None
        if form is not None:
            payload = urlencode(form).encode()
            headers["Content-Type"] = "application/x-www-form-urlencoded"
        elif body is not None:
            payload = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        cpu_before = tree_cpu_seconds(self.server_pid) if self.server_pid else 0.0
        started = time.perf_counter()
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            connection.request(method, path, body=payload, headers=headers)
            response = connection.getresponse()
            data = response.read()
        finally:
            connection.close()
        ms = (time.perf_counter() - started) * 1000
        if self.server_pid:
            self.last_cpu_ms = (tree_cpu_seconds(self.server_pid) - cpu_before) * 1000
        for value in response.headers.get_all("Set-Cookie") or []:
            cookie = SimpleCookie()
            cookie.load(value)
            for name, morsel in cookie.items():
                self.cookies[name] = morsel.value
        return response.status, {k.lower(): v for k, v in response.getheaders()}, data, ms

    def get(self, path: str, expect: int = 200) -> float:
        status, _, _, ms = self.request("GET", path)
        assert status == expect, (path, status)
        return ms

    def json(self, method: str, path: str, body=None, expect: tuple[int, ...] = (200, 201)):
        status, _, data, _ = self.request(method, path, body=body)
        assert status in expect, (method, path, status, data[:500])
        return json.loads(data) if data else None


def tree_cpu_seconds(pid: int) -> float:
    """User + system CPU of a process and all its descendants still alive (from /proc, in clock ticks)."""
    total, pending = 0, [pid]
    while pending:
        current = pending.pop()
        try:
            fields = Path(f"/proc/{current}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])  # utime, stime
            for thread in Path(f"/proc/{current}/task").iterdir():
                pending += [int(child) for child in (thread / "children").read_text().split()]
        except (FileNotFoundError, ProcessLookupError):
            continue
    return total / os.sysconf("SC_CLK_TCK")


def backend_cpu_seconds(connection) -> float | None:
    """User + system CPU of this Django connection's PostgreSQL backend so far (from /proc: the server runs
    on this machine); None on SQLite or for a server elsewhere."""
    if connection.vendor != "postgresql":
        return None
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        pid = cursor.fetchone()[0]
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until_up(port: int, path: str, process: subprocess.Popen, limit: float = 180) -> float:
    """Poll until the server answers `path` (any status below 500); return the moment it did."""
    deadline = time.perf_counter() + limit
    while time.perf_counter() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server on port {port} exited with {process.returncode}")
        try:
            status, _, _, _ = Http(port).request("GET", path, timeout=5)
            if status < 500:
                return time.perf_counter()
        except OSError:
            pass
        time.sleep(0.02)
    raise SystemExit(f"nothing answered on port {port} within {limit} s")


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def child(command: list[str], env: dict[str, str]) -> tuple[int, float, str]:
    """Run a child to its end; return its peak RSS in KiB (wait4), its wall time in s, and its stdout."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        elapsed = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        text = out.read().decode()
        if os.waitstatus_to_exitcode(status):
            raise SystemExit(f"{' '.join(command)[:200]} failed:\n{text}\n{err.read().decode()[-3000:]}")
    return usage.ru_maxrss, elapsed, text
