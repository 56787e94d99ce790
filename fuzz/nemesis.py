"""The nemesis: faults a fuzz client can inflict on its own requests.

Kept apart from the rules so the generator says *when* and the nemesis says *how*.
"""
from __future__ import annotations

import time

from .client import Outcome, StreamClient


def cancel_in_flight(stream: StreamClient, timeout_s: float) -> None:
    """stop_stream(cancel_requests=True): the RPC is cancelled; what was in flight ends CANCELLED."""
    stream.close(cancel_requests=True, timeout_s=timeout_s)


def drop_stream(stream: StreamClient, timeout_s: float) -> None:
    """The client closes its stream (half-close) and goes away; its sequences stay live."""
    stream.close(cancel_requests=False, timeout_s=timeout_s)


def go_silent(seconds: float) -> float:
    """Every client stays silent for `seconds`; returns the time actually slept."""
    started = time.monotonic()
    if seconds > 0:
        time.sleep(seconds)
    return time.monotonic() - started


def outcome_of(box, timeout_s: float) -> Outcome | None:
    """The outcome in a stream's box, waiting at most `timeout_s` (0: just look)."""
    try:
        return box.get(timeout=timeout_s) if timeout_s > 0 else box.get_nowait()
    except Exception:
        return None
