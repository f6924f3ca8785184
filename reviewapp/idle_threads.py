"""Which threads a fork may leave behind, and holding new work back while one is taken.

A child forked from a process copies only the thread that forked. Had another thread been holding a lock
the child then needs (a TLS library's, say, in the middle of an HTTPS call), the child would wait on it
forever. A thread pool that keeps its threads between uses (the LLM calls' pool of a worker process) runs
each unit of work through `running`, with its thread names' prefix registered (`register_pool`): its
threads, waiting for work, hold nothing. `quiet()`, held while a fork is taken, says whether every other
thread of the process is such an idle pool thread, and no registered pool starts work until it is left.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

_lock = threading.Lock()
_busy = 0
_prefixes: set[str] = set()


def register_pool(prefix: str) -> None:
    """Threads whose names start with `prefix` belong to a pool that runs its work through `running`."""
    with _lock:
        _prefixes.add(prefix)


def running(work: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`work(*args, **kwargs)` on a registered pool's thread: counted busy meanwhile."""
    global _busy
    with _lock:
        _busy += 1
    try:
        return work(*args, **kwargs)
    finally:
        with _lock:
            _busy -= 1


def only_idle_others() -> bool:
    """Whether every thread but this one is a registered pool's, and none of them is at work. The answer
    holds only as long as nothing new starts: take a fork inside `quiet()`."""
    current = threading.current_thread()
    prefixes = tuple(_prefixes)
    return _busy == 0 and all(
        thread is current or (prefixes and thread.name.startswith(prefixes)) for thread in threading.enumerate()
    )


@contextmanager
def quiet() -> Iterator[bool]:
    """Hold new work of the registered pools back; yields `only_idle_others()`."""
    with _lock:
        yield only_idle_others()
