"""CPU per LLM call of the client a sweep calls through, apart from the rest of a sweep's work.

    PYTHONPATH=. .venv/bin/python bench/llm_client_cpu.py [--calls 3000] [--threads 32] [--latency 0]

tests/llm_server.py answers in this process; the calls are made from a child process (a fork) whose
CPU time is the figure, by three paths over the same loopback HTTP:
  1. `LLMClient.complete` (scoring/llm.py): what a sweep's call costs, retries and rate limiter included
     (none configured here);
  2. the openai client's `post` alone, with the body `complete` sends and the reply as bytes;
  3. the openai client's own httpx client, the same request with no openai layer: the floor of the
     HTTP work itself.
bench/sweep.py gives a sweep's CPU per verdict in the worker; this says how much of it is the client.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

PATHS = ("LLMClient.complete", "openai post", "httpx")
SYSTEM = "You judge how concise an agent's answer is. Answer with JSON: rating 1 to 3, explanation."


def _user(n: int) -> str:
    return f"The agent said: Sure, booking {n} moves to Monday. Rate it 1 to 3."


def _calls(base_url: str, path: str, calls: int, threads: int, results) -> None:
    from scoring.llm import CHAT_COMPLETIONS_PATH, LLMClient

    client = LLMClient(base_url=base_url, api_key="bench")

    def body(n: int) -> dict:
        return {
            "model": "bench",
            "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": _user(n)}],
        }

    if path == "LLMClient.complete":

        def one(n: int) -> bool:
            return not client.complete(model="bench", system=SYSTEM, user=_user(n)).error

    elif path == "openai post":

        def one(n: int) -> bool:
            return bool(client._openai.post(CHAT_COMPLETIONS_PATH, body=body(n), cast_to=bytes))

    else:
        url = base_url.rstrip("/") + CHAT_COMPLETIONS_PATH
        headers = {"Authorization": "Bearer bench", "Content-Type": "application/json"}

        def one(n: int) -> bool:
            # The httpx client under this thread's openai client (LLMClient spreads threads over a few).
            http = client._openai._client
            return http.post(url, content=json.dumps(body(n)), headers=headers).status_code == 200

    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(one, range(50)))  # connections opened, code warm
    cpu, wall = time.process_time(), time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        answered = sum(pool.map(one, range(calls)))
    results.put((time.process_time() - cpu, time.perf_counter() - wall, answered))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--threads", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.0, help="the endpoint's latency (s)")
    args = parser.parse_args()
    from tests.llm_server import run_llm_server

    context = multiprocessing.get_context("fork")
    with run_llm_server(behaviour="good", latency_s=args.latency) as server:
        print(f"{args.calls:,} calls from {args.threads} threads, endpoint latency {args.latency:g} s")
        for path in PATHS:
            results = context.Queue()
            child = context.Process(target=_calls, args=(server.base_url, path, args.calls, args.threads, results))
            child.start()
            cpu, wall, answered = results.get()
            child.join()
            print(
                f"{path}: {cpu / args.calls * 1000:.2f} ms CPU per call, {args.calls / wall:,.0f} calls/s,"
                f" {args.calls - answered} failed"
            )


if __name__ == "__main__":
    main()
