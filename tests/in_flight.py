"""How many threads are inside a block at once, and the most there ever were: a test's
stand-in for "processes running at the same time"."""

from __future__ import annotations

import threading


class InFlight:
    def __init__(self):
        self.now = self.most = 0
        self._lock = threading.Lock()

    def __enter__(self) -> InFlight:
        with self._lock:
            self.now += 1
            self.most = max(self.most, self.now)
        return self

    def __exit__(self, *_) -> None:
        with self._lock:
            self.now -= 1
