"""How much CPU does this machine give two busy processes at once? A figure to print beside any other.

    PYTHONPATH=. .venv/bin/python bench/cpus.py [--seconds 2] [--processes 2]

Runs the same fixed loop once alone and then in --processes processes at once, and prints the wall
and CPU seconds of each and the parallel factor: the work done per second with all of them running,
over the work done per second by one alone. On two idle cores the factor is close to 2.0; a virtual
machine whose cores share a physical one, or whose host is busy, gives less, and then every figure
that relies on two processes working side by side (an import's reader and its database, an export's
two halves) falls short of what two real cores would give. The CPU seconds tell a second thing: when
they grow with the processes running, the cores are slower per instruction while both are busy.

It then writes to --memory-mib of memory new to this process, a byte per page, and prints how fast
that went. A virtual machine whose host backs the guest's memory only when it is used (and takes
back what the guest frees: a balloon device) charges that in system time. Seen on the 2-core
machines here: 0.9-3.7 s per GiB (18 GiB touched once on a newly started one took 54 s), where a
machine that keeps its memory gives a few hundredths of a second. An export that writes a 440 MB
file into the page cache then spends 0.4-1.3 s of system time on its writes alone, varying from run
to run; figures taken on such a machine vary for a reason that is not the code's.

First it prints how fast one core runs the loop alone, in million iterations per second of this
Python: the figure that tells two machines apart when every page, import and export is faster on
one of them (docs/performance.md gives it per machine from the thirteenth on).
"""

from __future__ import annotations

import argparse
import mmap
import multiprocessing
import os
import time


def spin(loops: int) -> tuple[float, float]:
    started, cpu = time.perf_counter(), time.process_time()
    total = 0
    for i in range(loops):
        total += i
    return time.perf_counter() - started, time.process_time() - cpu


def calibrate(seconds: float) -> int:
    """Loops that take about `seconds` alone."""
    loops = 1_000_000
    while True:
        elapsed, _ = spin(loops)
        if elapsed > 0.2:
            return int(loops * seconds / elapsed)
        loops *= 4


def parallel_factor(seconds: float, processes: int) -> tuple[float, float, list[tuple[float, float]], float]:
    """The parallel factor, the wall seconds of the loop alone, the wall and CPU seconds of each
    process together, and one core's speed alone (million loops per second)."""
    loops = calibrate(seconds)
    alone_wall, _ = spin(loops)
    with multiprocessing.get_context("spawn").Pool(processes) as pool:
        started = time.perf_counter()
        together = pool.map(spin, [loops] * processes)
        wall = time.perf_counter() - started
    return processes * alone_wall / wall, alone_wall, together, loops / alone_wall / 1e6


def summary(*, seconds: float = 1.0, processes: int = 2, memory_mib: int = 256) -> str:
    """One line on the machine for another bench's report: one core's speed, the parallel factor,
    the first use of memory."""
    factor, _, _, speed = parallel_factor(seconds, processes)
    rate = memory_mib / 1024 / first_touch(memory_mib << 20)
    return (
        f"bench/cpus.py: one core {speed:.1f} M loops/s, parallel factor {factor:.2f} of {processes},"
        f" first use of new memory {rate:.1f} GiB/s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=2.0, help="length of the loop alone")
    parser.add_argument("--processes", type=int, default=2)
    parser.add_argument("--memory-mib", type=int, default=512, help="memory to use for the first time (0: none)")
    args = parser.parse_args()
    factor, alone_wall, together, speed = parallel_factor(args.seconds, args.processes)
    print(f"alone: {alone_wall:.2f} s wall, one core {speed:.1f} M loops/s")
    for number, (each_wall, each_cpu) in enumerate(together, start=1):
        print(f"process {number} of {args.processes}: {each_wall:.2f} s wall, {each_cpu:.2f} s CPU")
    print(f"parallel factor {factor:.2f} of {args.processes} (load average {os.getloadavg()[0]:.2f})")
    if args.memory_mib:
        seconds = first_touch(args.memory_mib << 20)
        rate = args.memory_mib / 1024 / seconds
        print(f"first use of {args.memory_mib} MiB of new memory: {seconds:.3f} s ({rate:.1f} GiB/s)")


def first_touch(size: int) -> float:
    """Seconds to write one byte to each page of `size` bytes of anonymous memory, newly mapped."""
    page = mmap.PAGESIZE
    with mmap.mmap(-1, size) as memory:
        started = time.perf_counter()
        for offset in range(0, size, page):
            memory[offset] = 1
        return time.perf_counter() - started


if __name__ == "__main__":
    main()
