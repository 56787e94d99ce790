"""What a cancel_pipelined group's answers leave possible (the checker's half of
fuzz/harness/cancelling.py, which sends the group and times its cancel).

A group is the sequence's sum before it (`base`), the requests beside the client's stream (the
first, and the witness where one went) and the requests behind on the stream, in their order.
One stream is one queue: what ran of those behind is a prefix of them; where the requests beside
ran among them is the server's choice. Everything here is pure: values in, sums and verdicts out.
"""
from __future__ import annotations

from typing import Callable

import attrs

from .model import normalize_message, sums_of_some
from ..values import Outcome, Request


def swept(got: Outcome, via: str = "grpc") -> bool:
    """Failed with the cancelled request it was queued behind: CANCELLED, with an empty message
    (on a stream, whose errors carry no status: an error that is empty or says it was cancelled;
    the builds that have cancellation send none there, swept-request-error-lost-on-stream)."""
    if via == "stream":
        message = normalize_message(got.message)
        return got.status == "ERROR" and (message == "" or "cancel" in message.lower())
    return got.status == "CANCELLED" and normalize_message(got.message) == ""


def one_of(values: list, most: int) -> str:
    """Sums an answer may be, as an expectation shows them: each, or the first and last of more
    than `most` (a deep queue leaves hundreds possible)."""
    return " or ".join(map(repr, values)) if len(values) <= most else f"{values[0]!r} ... {values[-1]!r}"


@attrs.frozen
class Queue:
    """A group's requests as sent, and the model's sum after a request (`then`: BatcherModel.then,
    which knows a build that carries no state)."""
    base: float
    beside: tuple  # Request: the first, then the witness
    behind: tuple  # Request: on the client's stream, in its order
    then: Callable[[float, float], float]

    @property
    def behind_value(self) -> float:
        return sum(r.value for r in self.behind)

    def prefixes(self, start) -> list:
        """`start`, then the sum after each more of the requests behind, in their stream's order."""
        sums = [start]
        for r in self.behind:
            sums.append(self.then(sums[-1], r.value))
        return sums

    def beside_sums(self, without: Request | None = None) -> set:
        """Every sum some of the requests beside the queue (not `without`) make on the base, in
        any order."""
        return sums_of_some(self.base, [r.value for r in self.beside if r is not without], self.then)

    def any_sum(self, without: Request | None = None) -> frozenset:
        """Every sum some of the group's requests (but `without`) could make on its base: what
        the server's order may have made of a group whose order the answers show was lost."""
        # those behind, one stream's, run as a prefix of their order (not any subset: 2^k sums)
        return frozenset(p for s in self.beside_sums(without) for p in self.prefixes(s))

    def witness_sums(self, as_if_all_ran: float, carries_state: bool) -> list:
        """The witness's sum after none, one, ..., all of the requests behind had run before it
        (the last is `as_if_all_ran`); all one sum where the model carries no state (the witness
        then tells nothing of them)."""
        if not carries_state:
            return [as_if_all_ran] * (len(self.behind) + 1)
        return self.prefixes(as_if_all_ran - self.behind_value)

    def wrong_behind(self, got: list) -> tuple | None:
        """The first answer of a request behind, answered before the cancel (`got`: each one's
        Outcome, or None), that is no running sum its place in the queue allows: the sum after the
        queue up to it, on the base with any of the requests beside the queue run before it.
        (what it answered, what it may be), or None."""
        runs = [self.prefixes(s) for s in self.beside_sums()]  # (once: a queue is up to 256 deep)
        for i, (req, o) in enumerate(zip(self.behind, got)):
            if o is None or not o.ok:
                continue
            possible = sorted({run[i + 1] for run in runs})
            if o.value not in possible:
                return (f"the request {i + 1} of {len(self.behind)} behind ({req.describe()}) answered "
                        f"OUTPUT={o.value!r}", f"OUTPUT={one_of(possible, 3)}")
        return None

    def ran_behind(self, after: Request, got: Outcome) -> bool:
        """The answer after the group holds the cancelled requests' values (and only such a sum)."""
        first = self.then(self.base, self.beside[0].value)
        with_it = self.then(self.then(first, self.behind_value), after.value)
        return got.value == with_it != self.then(first, after.value)

    def went_on(self, after: Request, got: Outcome, *, late: bool, ended: bool, may_go_on: bool) -> str:
        """Why the next request's answer breaks a promise: what the group did, and what came."""
        cancelled = self.behind[0]
        more = f" (and the {len(self.behind) - 1} behind it on its stream)" if len(self.behind) > 1 else ""
        what = (f"{cancelled.describe()}{more} was cancelled behind {self.beside[0].describe()}"
                + (" (queued, or running)" if late else ", while queued")
                + (f", and {self.beside[1].describe()}, queued behind it, failed with it" if ended else "")
                + (": the sequence must end with it, or go on from a sum of the requests sent" if late
                   else ": the sequence must end with it, or go on from a sum its requests leave possible"
                   if may_go_on else ": the sequence must end with it"))
        if not got.ok:
            return f"{what}, but its next request was refused with another error"
        if got.value == self.base + self.beside[0].value + after.value:
            return f"{what}, but it went on without them (OUTPUT={got.value!r})"
        return f"{what}, but it went on (OUTPUT={got.value!r})"
