"""A clock that only moves when the code under test sleeps: waits are checked exactly, without waiting."""

from __future__ import annotations


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds
