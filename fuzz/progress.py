"""Progress lines for long runs: elapsed time, examples/steps, requests/s, failures so far.

A daemon thread samples a snapshot function every `interval_s` and prints one line to stderr,
but only when stderr is a terminal: in CI logs and pipes the run stays quiet. The loops being
watched only keep counters; they never call into this module, so a slow terminal cannot slow
them down.
"""
from __future__ import annotations

import sys
import threading
import time
from typing import Callable, TextIO

import attrs


@attrs.frozen
class Snapshot:
    examples: int = 0  # Hypothesis examples (fuzz) or sequences (stress)
    steps: int = 0
    requests: int = 0
    failures: int = 0


def line(label: str, elapsed_s: float, snap: Snapshot, unit: str = "examples") -> str:
    rate = snap.requests / elapsed_s if elapsed_s > 0 else 0.0
    return (f"[{label}] {elapsed_s:6.0f} s  {snap.examples} {unit}  {snap.steps} steps  "
            f"{snap.requests} requests ({rate:.0f}/s)  failures {snap.failures}")


class Progress:
    """Context manager: prints `line(...)` every interval while the block runs."""

    def __init__(self, label: str, snapshot: Callable[[], Snapshot], *, interval_s: float = 10.0,
                 unit: str = "examples", stream: TextIO | None = None, enabled: bool | None = None):
        self.label, self.snapshot, self.interval_s, self.unit = label, snapshot, interval_s, unit
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = _is_terminal(self.stream) if enabled is None else enabled
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = 0.0
        self.printed = 0

    def __enter__(self) -> "Progress":
        self._started = time.monotonic()
        if self.enabled:
            self._thread = threading.Thread(target=self._run, daemon=True, name=f"progress-{self.label}")
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                text = line(self.label, time.monotonic() - self._started, self.snapshot(), self.unit)
                print(text, file=self.stream, flush=True)
                self.printed += 1
            except Exception:  # a progress line must never take the run down
                return


def _is_terminal(stream) -> bool:
    try:
        return stream.isatty()
    except Exception:
        return False
