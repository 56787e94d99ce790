"""How a crowd runs: requests sent at once (as the engine's send_all sends a crowd: every one
encoded first, then handed to its stream) to an idle direct-strategy instance, and how the server
grouped them into executions, read from each answer's live-row diagnostic (LIVE_ROWS_OUTPUT).

The oracle table's minimal programs for bugs of batch composition (tests/broken_models.py,
FIRST_ALONE) count one request more than the rows the bug needs together; this is the measurement
that says why.

    python -m benchmarks.crowds [--trials 40] [--out benchmarks/results]
"""
from __future__ import annotations

import argparse
import collections
import tempfile
import time
from pathlib import Path

from fuzz.harness.client import StreamClient
from fuzz.harness.server import EmbeddedTriton, explicit_control
from fuzz.spec import ModelSpec
from modelgen import Variant, write_repository

from .machine_info import machine_info

RESULTS = Path(__file__).parent / "results"
# The broken models' 4-slot direct model (tests/broken_models.py _CORRID4), unbroken.
MODEL = Variant("corrid", "direct", 4, 1, "int32", "uint64", ("START", "END", "READY", "CORRID"))


def crowd_shapes(server, spec: ModelSpec, size: int, trials: int, ids) -> collections.Counter:
    """For `trials` crowds of `size` whole sequences (START+END) from an idle instance: how often
    each tuple of live rows (per answer, in send order) came back."""
    streams = [StreamClient(server.grpc_url) for _ in range(size)]
    shapes: collections.Counter = collections.Counter()
    try:
        for _ in range(trials):
            staged = [s.prepare([spec.request(next(ids), 1, start=True, end=True)]) for s in streams]
            for s, (messages, _) in zip(streams, staged):
                s.push(messages)
            got = [StreamClient.wait(boxes[0], 5.0) for _, boxes in staged]
            if not all(g.ok for g in got):
                raise RuntimeError(f"a crowd's request failed: {[g.describe() for g in got]}")
            shapes[tuple(g.live_rows for g in got)] += 1
            time.sleep(0.05)  # the instance idle again
    finally:
        for s in streams:
            s.close_channel()
    return shapes


def all_but_one_together(shapes: collections.Counter) -> float:
    """The share of crowds where one request ran alone and all the others in one execution."""
    size = len(next(iter(shapes)))
    hits = sum(n for shape, n in shapes.items() if sorted(shape) == [1] + [size - 1] * (size - 1))
    return hits / max(1, sum(shapes.values()))


def all_together(shapes: collections.Counter) -> float:
    """The share of crowds that ran as one execution."""
    size = len(next(iter(shapes)))
    return sum(n for shape, n in shapes.items() if set(shape) == {size}) / max(1, sum(shapes.values()))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.crowds")
    p.add_argument("--trials", type=int, default=40)
    p.add_argument("--out", type=Path, default=RESULTS)
    args = p.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        repo = Path(d) / "models"
        write_repository([MODEL], repo)
        server = EmbeddedTriton(repo, **explicit_control(repo)).start()
        try:
            info = machine_info(server.version)
            spec = ModelSpec.fetch(server, MODEL.name)
            ids = iter(range(1000, 10**9))
            lines = []
            for size in (2, 3, 4, 5):
                shapes = crowd_shapes(server, spec, size, args.trials, ids)
                together = f"all {size} together in {all_together(shapes):.0%}" if size <= spec.capacity \
                    else f"never all {size} together ({spec.capacity} slots)"
                lines.append(f"{size} at once: one alone and {size - 1} together in {all_but_one_together(shapes):.0%}, "
                             f"{together}; live rows per answer, in send order: "
                             + ", ".join(f"{list(k)} x{v}" for k, v in shapes.most_common()))
                print(lines[-1], flush=True)
        finally:
            server.stop()
    args.out.mkdir(parents=True, exist_ok=True)
    text = ["# How a crowd runs", "", "Written by `python -m benchmarks.crowds`: crowds of whole sequences "
            f"sent at once to an idle instance of `{MODEL.name}` ({args.trials} crowds per size), each answer's "
            "live rows as the model reports them.", ""]
    text += [f"- {k}: {v}" for k, v in info.items()]
    text += ["", "```", *lines, "```", "",
             "Under the direct strategy the request of a crowd that reaches the idle instance first mostly runs "
             "alone, at once (which one it is varies: the streams race), and the others arrive while it runs and "
             "share the next execution; a crowd of k seldom puts all k in one execution. So a program that shows a "
             "bug needing k live rows together in most replays sends a crowd of k + 1, and the oracle table's "
             "minimal programs count that request (tests/broken_models.py, FIRST_ALONE).", ""]
    (args.out / "crowds.md").write_text("\n".join(text))
    print(f"wrote {args.out}/crowds.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
