"""One worker process of tests/integration/test_ratelimit_redis.py.

    python -m tests.integration.ratelimit_worker bucket|reservoir URL KEY PER_SECOND THREADS EACH START_AT

`THREADS` threads each take `EACH` slots from the limiter on KEY, all starting at START_AT (a Unix time),
then it prints JSON: for `bucket` (RedisRateLimiter) the Redis-clock grant times; for `reservoir`
(RedisSlotReservoir) {"slots": each slot's moment as the limiter reserved it (time.monotonic, which every
process of one machine shares), "released": the wall-clock moments each slot was released (time.time()),
"round_trips": the limiter's round trips to Redis}. It imports only
redis and the limiter, so a process starts in a fraction of a second.
"""

from __future__ import annotations

import json
import sys
import threading
import time

import redis


def main(kind: str, url: str, key: str, per_second: str, threads: str, each: str, start_at: str) -> None:
    connection = redis.Redis.from_url(url)
    if kind == "bucket":
        from scoring.ratelimit import RedisRateLimiter

        limiter = RedisRateLimiter(connection, key=key, per_second=float(per_second), max_wait_s=60)
        take = limiter.acquire_at
    else:
        from scoring.ratelimit_slots import RedisSlotReservoir

        limiter = RedisSlotReservoir(connection, key=key, per_second=float(per_second), max_wait_s=60)

        def take() -> tuple[float, float]:
            slot = limiter.acquire()
            return slot, time.time()

    moments, lock = [], threading.Lock()

    def run() -> None:
        for _ in range(int(each)):
            at = take()
            with lock:
                moments.append(at)

    time.sleep(max(0.0, float(start_at) - time.time()))
    pool = [threading.Thread(target=run) for _ in range(int(threads))]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    if kind == "bucket":
        print(json.dumps(moments))
    else:
        slots, released = [slot for slot, _ in moments], [at for _, at in moments]
        print(json.dumps({"slots": slots, "released": released, "round_trips": limiter.round_trips}))


if __name__ == "__main__":
    main(*sys.argv[1:8])
