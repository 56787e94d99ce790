"""Each kind of step (values.Kind) is registered once, by the module that sends and checks it:
its replay (the fuzzer's own, through the engine) and its play in the standalone reproducer. A
step family (fuzz/harness/cancelling.py, fuzz/harness/sharing.py) keeps all of these beside its
send and its check; the core kinds' live in fuzz/corpus/replay.py (their plays call the reproducer
Player's methods).
The corpus codec is one for every kind (a step's fields), so a new kind needs nothing there.

A play is a function `(p, step)` of the reproducer's runtime, where `p` is its Player: its source
is copied into the standalone runtime (fuzz/corpus/reproducer.py), so it may use only `p`, the
standard modules the runtime imports (json, queue, threading, time) and the step (a dict, as the
corpus JSON holds it). tests/test_step_kinds.py holds every kind to one replay and one play.
"""
from __future__ import annotations

import importlib
import inspect
import pkgutil
from typing import Callable

from .values import Kind


class ReplayDrift(AssertionError):
    """The program cannot be replayed as recorded: a step's precondition does not hold now."""


# (engine, step, spec, settings) -> None; raises ReplayDrift where the step cannot be replayed
Replayer = Callable[..., None]
REPLAYERS: dict[Kind, Replayer] = {}
PLAYS: dict[Kind, Callable] = {}  # the standalone reproducer's, for the kinds a family registers
PREPARES: list[Callable] = []  # (p) -> None: a family's set-up of the Player, before the first step
HELPERS: list[Callable] = []  # other functions of a family's plays, copied with them
OWN_WAIT: set[Kind] = set()  # kinds whose play waits the step's wait_s itself (else the Player waits first)


def _register(table: dict, what: str, kinds: tuple):
    def register(fn):
        for kind in kinds:
            if kind in table:
                raise ValueError(f"{kind.value} steps already {what} with {table[kind].__name__}")
            table[kind] = fn
        return fn
    return register


def replays(*kinds: Kind):
    """Registers the fuzzer's replay of these kinds."""
    return _register(REPLAYERS, "replay", kinds)


def plays(*kinds: Kind, own_wait: bool = False):
    """Registers the standalone reproducer's play of these kinds (its source is copied there)."""
    if own_wait:
        OWN_WAIT.update(kinds)
    return _register(PLAYS, "play", kinds)


def prepares(fn: Callable) -> Callable:
    """Registers a family's set-up of the reproducer's Player (its source is copied there too)."""
    PREPARES.append(fn)
    return fn


def play_helper(fn: Callable) -> Callable:
    """Registers a function a family's plays call (its source is copied there too)."""
    HELPERS.append(fn)
    return fn


def load_families() -> None:
    """Imports every module of fuzz/harness and the core kinds' (fuzz/corpus/replay.py): a step
    family registers its kinds as it loads, so a new family's module needs no line anywhere else."""
    from . import harness

    for module in pkgutil.iter_modules(harness.__path__):
        importlib.import_module(f"{harness.__name__}.{module.name}")
    importlib.import_module(f"{__package__}.corpus.replay")


def drift(step, why: str) -> ReplayDrift:
    return ReplayDrift(f"step {step.index} ({step.action}): {why}")


def recorded_via(engine, step) -> str:
    """The recorded transport, HTTP over unary gRPC where the server was given without HTTP."""
    return "grpc" if step.via == "http" and engine.http is None else step.via


def spliced() -> str:
    """The registered plays as source for the standalone runtime: the functions, each once, then
    the kinds they play added to its KINDS table and the set-ups to its PREPARES."""
    load_families()
    # in the order of their modules and lines: the same text whatever order the modules loaded in
    functions = sorted(set([*HELPERS, *PREPARES, *PLAYS.values()]), key=lambda fn: (fn.__module__, fn.__code__.co_firstlineno))
    lines = ["# The plays the step families registered (fuzz/steps.py copies them here from their modules)", "", ""]
    names = [fn.__name__ for fn in functions]
    assert len(set(names)) == len(names), f"two plays or helpers share a name: {sorted(names)}"
    for fn in functions:
        source = inspect.getsource(fn).rstrip().split("\n")
        lines += source[next(i for i, line in enumerate(source) if line.startswith("def ")):] + ["", ""]  # (no decorators)
    lines.append("KINDS.update({")
    lines += [f'    "{kind.value}": {fn.__name__},' for kind, fn in sorted(PLAYS.items(), key=lambda kv: kv[0].value)]
    lines.append("})")
    lines.append(f"PREPARES.extend([{', '.join(fn.__name__ for fn in PREPARES)}])")
    lines.append(f"OWN_WAIT.update({sorted(k.value for k in OWN_WAIT)!r})" if OWN_WAIT else "")
    return "\n".join(lines).rstrip() + "\n"
