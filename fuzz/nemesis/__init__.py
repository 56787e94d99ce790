"""The nemesis: faults inflicted on the clients, the network and the server.

Kept apart from the rules so the generator says *when* and the nemesis says *how*; a fault is a
step of the program (its Fault value), replayed from the corpus like any other. The faults a
campaign may draw are named in FuzzSettings.nemesis (pytest --nemesis):

  slow        the repository also holds slow models (modelgen.slow_variants): requests queue
              and batches fill (a property of the models, not a rule)
  cut         a TCP proxy between some clients and the server drops their connections (RST)
  stall       that proxy holds a client's bytes for a while, so a request arrives late
  restart     the server restarts (SIGTERM or SIGKILL) mid-campaign
  reload      the model is reloaded through the repository API (explicit model control)
  full_batch  the server restarts with TRITONSERVER_DELAY_SCHEDULER set to the model's capacity,
              so that many STARTs must run as full batches
  deadlines   clients give up on unary gRPC calls in flight: whole sequences (START+END) sent
              several at once, each with a deadline of 0.3 to 10 ms (server issue 7368), or
              cancelled as soon as they are sent (server PR 7325); on a decoupled model, each on
              a stream of its own, cancelled at its deadline (an iterative model's: a START)
"""
from __future__ import annotations

import time

from ..harness.client import GrpcClient, StreamClient, open_channel
from .proxy import FaultProxy
from ..values import LOST_CONNECTION, Fault, Outcome

NEMESES = ("slow", "cut", "stall", "restart", "reload", "full_batch", "deadlines")
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


class Nemesis:
    """The faults, as Jepsen has them: operations on the system under test, each given as the
    Fault value a program records, so that fuzzing and a replay strike the same thing.

    `strike` does a fault to the server or the network (`restart`, `full_batch`: a restart with
    the scheduler hooks in the Fault's env; `reload`; `cut`, through the fault proxy) and `hold`
    sends a request through a stalled proxy (`stall`). The engine keeps the program's side of a
    fault (its clients reconnect, the reference model forgets what the server lost, the step is
    recorded)."""

    def __init__(self, server, model: str):
        self.server, self.model = server, model

    def strike(self, fault: Fault, proxy: FaultProxy | None = None) -> int:
        """Does the fault; returns how many connections a cut reset (0 for the others)."""
        if fault.name == "reload":
            self.server.reload_model(self.model)
        elif fault.name in ("restart", "full_batch"):
            self._restart(graceful=fault.graceful, env=dict(fault.env))
        elif fault.name == "cut":
            if proxy is None:
                raise ValueError("a cut needs the fault proxy between the clients and the server")
            return proxy.cut()
        else:
            raise ValueError(f"{fault.name!r} is not a fault a program strikes (stall is a held send: hold())")
        return 0

    def _restart(self, *, graceful: bool, env: dict) -> None:
        """Restarts the embedded server (graceful: SIGTERM; else SIGKILL, a crash). `env` is set for
        the new process only (the server's test hooks are read once, when a model loads)."""
        saved = dict(self.server.env)
        self.server.env.update(env)
        try:
            self.server.restart(graceful=graceful)
        finally:
            self.server.env.clear()
            self.server.env.update(saved)

    def hurry(self, fault: Fault, requests, streams: bool = False, spared_s: float = 5.0) -> list:
        """Sends `requests` (one per id of a deadlines Fault) over unary gRPC, `fault.at_once` in
        flight together on as many channels, each given up after `fault.deadline_us` (0: cancelled
        as soon as its round is sent) but the spared ones (Fault.spared), which wait for their
        answers; returns their Outcomes in order (CLIENT_TIMEOUT or CANCELLED where the client
        gave up). `streams`: each on a stream of its own instead (a decoupled model, the give_up
        fault), the stream cancelled at the deadline unless its answer came. A spared call waits
        `spared_s` (the engine's answer bound) for its answer."""
        if streams:
            return self._hurry_streams(fault, requests, spared_s)
        clients = [GrpcClient(self.server.grpc_url) for _ in range(max(1, fault.at_once))]
        outcomes = []
        try:
            for first in range(0, len(requests), len(clients)):
                spared = [fault.spared(i) for i in range(first, min(len(requests), first + len(clients)))]
                calls = [c.send(r, timeout_s=spared_s if keep else fault.deadline_us / 1e6 if fault.deadline_us else 5.0)
                         for c, r, keep in zip(clients, requests[first:first + len(clients)], spared)]
                for call, keep in zip(calls, spared):
                    if not fault.deadline_us and not keep:
                        call.cancel()
                outcomes += [call.get(timeout=spared_s if keep else 5.0)  # each ends by its deadline
                             for call, keep in zip(calls, spared)]
        finally:
            for c in clients:
                c.close()
        return outcomes

    def _hurry_streams(self, fault: Fault, requests, spared_s: float = 5.0) -> list:
        """What a stream cancelled in flight brings is the client's giving up, unless it is the
        whole answer: anything else (the error or the response without OUTPUT that races the
        cancel) comes back CANCELLED, what it was in its message; a lost connection stays one. A
        spared stream is not cancelled: what it brings is its answer, whatever it is."""
        # One connection for every stream (a stream cancelled ends that RPC alone): a connection
        # per call cost give_up_beside a fifth of a campaign's rate.
        shared = open_channel(self.server.grpc_url)
        try:
            return self._hurry_rounds(fault, requests, spared_s, shared)
        finally:
            shared.close()

    def _hurry_rounds(self, fault: Fault, requests, spared_s: float, shared) -> list:
        outcomes = []
        for first in range(0, len(requests), max(1, fault.at_once)):
            streams = [StreamClient(self.server.grpc_url, shared) for _ in requests[first:first + fault.at_once]]
            # The calls go together, each stream opened and each request encoded first: sent one
            # by one, each new stream's first request came about a millisecond after the last's,
            # so each ran alone and was answered before the round's deadline (0 of 24 rounds of
            # 4 calls cancelled one with a deadline past a typical latency).
            for s in streams:
                s.open()
            staged = [s.prepare([r]) for s, r in zip(streams, requests[first:first + fault.at_once])]
            for s, (messages, _) in zip(streams, staged):
                s.push(messages)
            boxes = [b for _, (b,) in staged]
            given_up = []
            for i, (s, box) in enumerate(zip(streams, boxes), first):
                time.sleep(max(0.0, box.started + fault.deadline_us / 1e6 - time.monotonic()))  # its own deadline
                given_up.append(box.empty() and not fault.spared(i))
                if given_up[-1]:
                    s.cancel()  # (closed below: a close waits for its reader, and the next deadline does not)
            for s, gave_up in zip(streams, given_up):
                if gave_up:
                    s.close(cancel_requests=True, timeout_s=5.0)  # what was in flight ends CANCELLED
            for i, (box, gave_up) in enumerate(zip(boxes, given_up), first):
                got = StreamClient.wait(box, spared_s if fault.spared(i) else 5.0)
                if gave_up and not got.ok and got.status not in LOST_CONNECTION | {"CANCELLED"}:
                    got = Outcome(status="CANCELLED", message=f"cancelled by the client ({got.describe()})",
                                  latency_s=got.latency_s, sent_at=got.sent_at)
                outcomes.append(got)
            for s in streams:
                s.close_channel()
        return outcomes

    @staticmethod
    def hold(proxy: FaultProxy, stream, req, until: float):
        """Sends `req` on a stream behind `proxy` while the proxy holds every byte, and lets it go at
        monotonic time `until`: the server sees the request arrive then. Returns the answer's box."""
        proxy.stall()
        try:
            box = stream.send(req)
            time.sleep(max(0.0, until - time.monotonic()))
        finally:
            proxy.resume()
        return box


def open_proxy(grpc_url: str) -> FaultProxy:
    """A fault proxy in front of the server's gRPC port, for the clients a cut or a stall reaches."""
    host, port = grpc_url.removeprefix("grpc://").rsplit(":", 1)
    return FaultProxy(host, int(port)).start()
