"""How deep a campaign went: requests per sequence and slot-reuse cycles.

The reference model counts (Depth, one per example); a campaign adds them up (DepthTally) and
reports a DepthSummary: the length histogram, its median and tail, and how many
cancel-or-abandon -> idle-expiry -> slot-reuse cycles ran, per minute. Bookkeeping only:
nothing here decides a verdict.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

import attrs

# Histogram buckets by requests per sequence: 1, 2-3, 4-7, ... , 128+.
BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128)


@attrs.define
class Depth:
    """One model's counters: every sequence's length when it ends (END, expiry, a restart on its
    id, a server restart), and slots freed by an idle expiry that a new sequence then took."""
    lengths: list = attrs.Factory(list)
    reuse_cycles: int = 0
    expired_free: int = 0  # slots freed by expiry, not yet taken by a new sequence
    expired: int = 0  # sequences that ended by expiry (or a cancel), with no END the model heard

    def ended(self, seq, expired: bool = False) -> None:
        self.lengths.append(seq.requests)
        if expired:
            self.expired_free += 1
            self.expired += 1

    def slot_taken(self) -> None:
        if self.expired_free:
            self.expired_free -= 1
            self.reuse_cycles += 1


def bucket_label(i: int) -> str:
    lo = BUCKETS[i]
    if i + 1 == len(BUCKETS):
        return f"{lo}+"
    hi = BUCKETS[i + 1] - 1
    return str(lo) if lo == hi else f"{lo}-{hi}"


@attrs.frozen
class DepthSummary:
    sequences: int = 0
    median: float = 0.0
    p90: int = 0
    longest: int = 0
    histogram: tuple = ()  # (bucket label, count), every bucket
    reuse_cycles: int = 0
    cycles_per_min: float = 0.0

    @classmethod
    def of(cls, lengths, reuse_cycles: int, wall_s: float) -> "DepthSummary":
        """`lengths`: every sequence's length, or how many sequences had each length (a Counter:
        what a long campaign keeps, its size bounded by the distinct lengths, not the sequences)."""
        tally = lengths if isinstance(lengths, Mapping) else Counter(lengths)
        ordered = sorted((x, c) for x, c in tally.items() if c > 0)
        n = sum(c for _, c in ordered)

        def nth(i: int) -> int:  # the i-th smallest length, from 0
            for x, c in ordered:
                if i < c:
                    return x
                i -= c
            raise IndexError(i)

        counts = [0] * len(BUCKETS)
        for x, c in ordered:
            counts[max(i for i, lo in enumerate(BUCKETS) if x >= lo)] += c
        median = 0.0 if not n else (nth(n // 2) if n % 2 else (nth(n // 2 - 1) + nth(n // 2)) / 2)
        return cls(sequences=n, median=median, p90=nth(min(n - 1, int(0.9 * n))) if n else 0,
                   longest=ordered[-1][0] if n else 0,
                   histogram=tuple((bucket_label(i), c) for i, c in enumerate(counts)),
                   reuse_cycles=reuse_cycles,
                   cycles_per_min=round(60 * reuse_cycles / wall_s, 1) if wall_s > 0 else 0.0)

    @classmethod
    def from_json(cls, d: dict) -> "DepthSummary":
        return cls(**{**d, "histogram": tuple(tuple(b) for b in d.get("histogram", ()))})

    def line(self) -> str:
        """One line for the terminal summary."""
        hist = " ".join(f"{label}:{count}" for label, count in self.histogram if count)
        return (f"sequence lengths: median {self.median:g}, p90 {self.p90}, longest {self.longest} over "
                f"{self.sequences} sequences [{hist or 'none'}]; expiry->reuse cycles {self.reuse_cycles} "
                f"({self.cycles_per_min:g}/min)")
