"""Progress lines for long runs: elapsed time, examples/steps, requests/s, failures so far.

A daemon thread samples a snapshot function and prints one line: every 10 s on a terminal, every
60 s in a CI log or a pipe (a model's campaign can run for minutes between two pytest dots). Under
pytest the lines go to the stderr the run started with, kept aside before pytest captures a
test's output (`keep_console`); an xdist worker's stderr is its controller's. The loops being
watched only keep counters; they never call into this module, so a slow terminal cannot slow
them down.
"""
from __future__ import annotations

import os
import sys
import threading
import time
from typing import Callable, TextIO

import attrs

TERMINAL_S = 10.0
LOG_S = 60.0

_console: TextIO | None = None
_interval_s: float | None = None  # None: TERMINAL_S or LOG_S, whichever the console is; 0: no lines


def keep_console(interval_s: float | None = None) -> None:
    """Keeps a handle on this process's stderr as it is now, for progress lines that must show
    while pytest captures a test's output (call it before capture begins: pytest_configure), and
    sets how often they come (None: by the kind of console; 0: never)."""
    global _console, _interval_s
    _interval_s = interval_s
    if _console is None:
        try:
            _console = os.fdopen(os.dup(sys.stderr.fileno()), "w", buffering=1)
        except (OSError, ValueError, AttributeError):  # no real stderr (embedded, redirected to a buffer)
            _console = None


def console() -> TextIO:
    return _console if _console is not None else sys.stderr


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

    def __init__(self, label: str, snapshot: Callable[[], Snapshot], *, interval_s: float | None = None,
                 unit: str = "examples", stream: TextIO | None = None):
        self.label, self.snapshot, self.unit = label, snapshot, unit
        self.stream = stream if stream is not None else console()
        if interval_s is None:
            interval_s = _interval_s if _interval_s is not None else (
                TERMINAL_S if _is_terminal(self.stream) else LOG_S)
        self.interval_s = interval_s
        self.enabled = interval_s > 0
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
