"""How slow the server answers now, and so how long a missing answer is waited for before it is
called a hang.

A request that must be answered at once gets the prompt bound (FuzzSettings.prompt_s, 5 s). On a
starved machine (a campaign per core and more) an answer can take longer than that without the
server being stuck: the hang verdict (no_hangs) would then be timing's, not the server's. So the
bound widens with the latency the campaign measures: ten times the slowest of the latest prompt
answers to lone requests (not pipelined behind others, not held by a fault), at most GRACE_CAP_S
more. On an idle machine answers take milliseconds and a hang is
still called after about 5 s; six-fold oversubscribed, answers take up to a second or two and a
hang is called after the bound plus up to 25 s. Waiting longer only ever moves a verdict from
"hang" to "answered late" (whose answer is still checked): it never passes what would fail.
"""
from __future__ import annotations

import collections

import attrs

RECENT = 200  # prompt answers the slowest is taken from
FACTOR = 10.0
GRACE_CAP_S = 25.0


@attrs.define
class Lag:
    recent: collections.deque = attrs.Factory(lambda: collections.deque(maxlen=RECENT))
    # and of those, the answers that ran the model (a refusal skips it: it says nothing of the pace)
    ran: collections.deque = attrs.Factory(lambda: collections.deque(maxlen=RECENT))
    slow: int = 0  # answers that came after the prompt bound, within the grace (not hangs)
    slowest_s: float = 0.0  # the slowest of those

    def saw(self, latency_s: float, prompt_s: float, ran: bool = False) -> None:
        """A prompt request was answered (`ran`: its model ran it) or refused by the server after
        `latency_s`."""
        self.recent.append(latency_s)
        if ran:
            self.ran.append(latency_s)
        if latency_s > prompt_s:
            self.slow += 1
            self.slowest_s = max(self.slowest_s, latency_s)

    def typical(self) -> float:
        """The median latency of the latest prompt answers the model ran (0 before any came): the
        model's pace."""
        ordered = sorted(self.ran)
        return ordered[len(ordered) // 2] if ordered else 0.0

    def grace(self) -> float:
        """How much longer than the prompt bound a missing answer is waited for now."""
        return min(GRACE_CAP_S, FACTOR * max(self.recent, default=0.0))
