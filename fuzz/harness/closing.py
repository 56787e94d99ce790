"""Closing a stream with requests in flight (the machine's half_close rule).

A gRPC client ends its side of a stream (WritesDone, tritonclient's stop_stream without
cancel_requests) once it has nothing more to send, often before the answers to what it sent
came. The server must still run every request it read and answer each on that stream: only the
client's writing is over. So a client sends the next requests of live sequences back to back on
its stream (HELD steps), closes its side at once (HALF_CLOSE) and checks each answer (HELD_ANSWER):
the running sums, in order, as if the stream had stayed open; its next requests go on a new
stream, and the sequences go on there.
"""
from __future__ import annotations

from ..steps import drift, plays, replays
from ..values import Kind, Request


def half_close(engine, client: int, action: str = "close its side of the stream") -> None:
    """The client's stream ends its writing; its answers still come (close() waits for them, up
    to the bound a prompt answer has and a typical execution more for each in flight, as a
    pipelined run's answers get, and fails what did not come as a client timeout)."""
    stream = engine.streams[client]
    bound = engine.answer_bound() + stream.in_flight * engine.stats.lag.typical()
    stream.close(cancel_requests=False, timeout_s=bound)
    engine.record(client=client, action=action, kind=Kind.HALF_CLOSE)


def send_then_half_close(engine, client: int, reqs: list[Request], action: str) -> None:
    """The whole rule: the requests on the client's stream at once, its side closed, their
    answers checked. Raises the engine's Stale (nothing sent) where a sequence reached its idle
    window after the rule chose it."""
    sent = engine.send_held([(client, req) for req in reqs], action)
    half_close(engine, client, f"close its side of the stream, {len(sent)} request(s) in flight")
    engine.check_held(sent)


@replays(Kind.HALF_CLOSE)
def _replay_half_close(engine, step, spec, settings) -> None:
    if step.client in engine.pending:  # a shrunk program's client waits on the backlog: never so in fuzzing
        raise drift(step, f"client {step.client} has a START waiting in the backlog at replay")
    half_close(engine, step.client, step.action)


@plays(Kind.HALF_CLOSE)
def play_half_close(p, step):  # the requests before it were sent as HELD steps; their answers follow
    p.close_stream(step)
