"""The nemesis: faults inflicted on the clients, the network and the server.

Kept apart from the rules so the generator says *when* and the nemesis says *how*. The faults a
campaign may draw are named in FuzzSettings.nemesis (pytest --nemesis):

  slow        the repository also holds slow models (modelgen.slow_variants): requests queue
              and batches fill (a property of the models, not a rule)
  cut         a TCP proxy between some clients and the server drops their connections (RST)
  stall       that proxy holds a client's bytes for a while, so a request arrives late
  restart     the server restarts (SIGTERM or SIGKILL) mid-campaign
  reload      the model is reloaded through the repository API (explicit model control)
  full_batch  the server restarts with TRITONSERVER_DELAY_SCHEDULER set to the model's capacity,
              so that many STARTs must run as full batches
"""
from __future__ import annotations

import time

from .client import Outcome, StreamClient
from .proxy import FaultProxy

NEMESES = ("slow", "cut", "stall", "restart", "reload", "full_batch")
# Faults that restart the server or reload the model: they need the embedded server (and, for
# reload, explicit model control), and they are slow (a restart takes seconds).
SERVER_FAULTS = ("restart", "reload", "full_batch")
DELAY_SCHEDULER = "TRITONSERVER_DELAY_SCHEDULER"
BACKLOG_DELAY_SCHEDULER = "TRITONSERVER_BACKLOG_DELAY_SCHEDULER"


def parse(names: str) -> frozenset:
    """'cut,stall' or 'all' -> the set of nemesis names; ValueError names the unknown ones."""
    chosen = {n.strip() for n in names.split(",") if n.strip()}
    if "all" in chosen:
        return frozenset(NEMESES)
    problem = _unknown(chosen)
    if problem:
        raise ValueError(f"{problem} (or all)")
    return frozenset(chosen)


def _unknown(faults) -> str | None:
    unknown = set(faults) - set(NEMESES)
    return f"unknown nemesis {sorted(unknown)}; known: {', '.join(NEMESES)}" if unknown else None


def unsupported(faults, server) -> str | None:
    """Why `server` cannot take these faults (or they are not faults), or None."""
    problem = _unknown(faults)
    if problem:
        return problem
    if set(faults) & set(SERVER_FAULTS) and not hasattr(server, "restart"):
        return (f"nemesis {sorted(set(faults) & set(SERVER_FAULTS))} restarts or reloads the server: it needs the "
                f"embedded server this harness starts, not {server!r}")
    if "reload" in faults and getattr(server, "model_control_mode", None) != "explicit":
        return "nemesis reload needs the server started with --model-control-mode=explicit"
    return None


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


# -- the network --------------------------------------------------------------------------------

def open_proxy(grpc_url: str) -> FaultProxy:
    host, port = grpc_url.removeprefix("grpc://").rsplit(":", 1)
    return FaultProxy(host, int(port)).start()


def cut_connections(proxy: FaultProxy) -> int:
    """Every connection through the proxy is reset, both ways; returns how many there were."""
    return proxy.cut()


def held_send(proxy: FaultProxy, stream: StreamClient, req, until: float):
    """Sends `req` on a stream behind `proxy` while the proxy holds every byte, and lets it go at
    monotonic time `until`: the server sees the request arrive then. Returns the answer's box."""
    proxy.stall()
    try:
        box = stream.send(req)
        go_silent(until - time.monotonic())
    finally:
        proxy.resume()
    return box


# -- the server ---------------------------------------------------------------------------------

def restart_server(server, *, graceful: bool, env: dict | None = None) -> None:
    """Restarts the embedded server (graceful: SIGTERM; else SIGKILL, a crash). `env` is set for
    the new process only (the server's test hooks are read once, when a model loads)."""
    saved = dict(server.env)
    server.env.update(env or {})
    try:
        server.restart(graceful=graceful)
    finally:
        server.env.clear()
        server.env.update(saved)


def reload_model(server, name: str) -> None:
    """Loads a new copy of `name` through the repository API; the old copy and its sequences go."""
    server.reload_model(name)

