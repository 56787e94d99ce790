"""What a generated accumulator model is: one frozen value per model variant.

A variant fixes everything that changes the sequence batcher's behaviour (strategy, slots,
instances, controls, id type, dtype, idle timeout) and how the model keeps its running sum
(its *flavour*). The model name spells the variant out, so a failure report names it.
"""
from __future__ import annotations

import attrs

FLAVOURS = ("corrid", "slot", "implicit")
STRATEGIES = ("direct", "oldest")
DTYPES = ("int32", "fp32")
CORRID_TYPES = ("uint64", "string")
CONTROLS = ("START", "END", "READY", "CORRID")

# Short enough that a fuzz step that waits past it costs well under a second.
DEFAULT_IDLE_US = 500_000


def _check_controls(instance, attribute, value):
    unknown = set(value) - set(CONTROLS)
    if unknown:
        raise ValueError(f"unknown control input(s) {sorted(unknown)}; known: {CONTROLS}")


@attrs.frozen
class Variant:
    """One stateful accumulator model.

    slots: sequence slots per instance (max_batch_size under direct, max_candidate_sequences
    under oldest). controls: which sequence control inputs the config declares.
    """

    flavour: str = attrs.field(validator=attrs.validators.in_(FLAVOURS))
    strategy: str = attrs.field(validator=attrs.validators.in_(STRATEGIES))
    slots: int = attrs.field(validator=attrs.validators.in_((1, 2, 4)))
    instances: int = attrs.field(validator=attrs.validators.in_((1, 2)))
    dtype: str = attrs.field(default="int32", validator=attrs.validators.in_(DTYPES))
    corrid_type: str = attrs.field(default="uint64", validator=attrs.validators.in_(CORRID_TYPES))
    controls: tuple = attrs.field(default=("START", "READY"), converter=tuple, validator=_check_controls)
    idle_us: int = attrs.field(default=DEFAULT_IDLE_US)
    backend: str = "python"

    def __attrs_post_init__(self):
        needed = {"corrid": {"START", "CORRID"}, "slot": {"START", "READY"}, "implicit": {"START", "READY"}}
        missing = needed[self.flavour] - set(self.controls)
        if missing:
            raise ValueError(f"flavour {self.flavour!r} needs control input(s) {sorted(missing)}")
        if self.flavour == "slot" and self.strategy == "oldest" and self.slots != 1:
            # Under oldest, batch positions are not tied to sequences; a per-slot model is only
            # well defined when an instance holds a single sequence.
            raise ValueError("flavour 'slot' with strategy 'oldest' needs slots=1")
        if self.idle_us <= 0:
            raise ValueError(f"idle_us must be positive, got {self.idle_us}")

    @property
    def name(self) -> str:
        ctl = "".join(c[0].lower() for c in CONTROLS if c in self.controls)
        parts = [self.backend[:2], self.flavour, self.strategy, f"s{self.slots}", f"i{self.instances}",
                 self.dtype, f"c{ctl}"]
        if "CORRID" in self.controls:
            parts.append("u64" if self.corrid_type == "uint64" else "str")
        return "_".join(parts)

    @property
    def total_slots(self) -> int:
        return self.slots * self.instances


def python_variants(idle_us: int = DEFAULT_IDLE_US) -> list[Variant]:
    """A covering set rather than the full product (which would start ~200 stub processes).

    Every flavour meets both strategies, every slot count, both instance counts and both dtypes;
    the corrid flavour meets both id types; END is declared by some models and not others.
    """
    V = lambda *a, **k: Variant(*a, idle_us=idle_us, **k)  # noqa: E731
    full = ("START", "END", "READY", "CORRID")
    return [
        V("corrid", "direct", 1, 1, "int32", "uint64", full),
        V("corrid", "direct", 4, 2, "fp32", "uint64", ("START", "END", "CORRID")),
        V("corrid", "direct", 2, 1, "fp32", "string", full),
        V("corrid", "oldest", 2, 1, "int32", "string", ("START", "READY", "CORRID")),
        V("corrid", "oldest", 4, 2, "int32", "uint64", full),
        V("slot", "direct", 1, 1, "int32", controls=("START", "READY")),
        V("slot", "direct", 2, 2, "fp32", controls=("START", "END", "READY")),
        V("slot", "direct", 4, 1, "int32", controls=("START", "END", "READY", "CORRID")),
        V("slot", "oldest", 1, 2, "int32", controls=("START", "READY")),
        V("implicit", "direct", 1, 1, "int32", controls=("START", "READY")),
        V("implicit", "direct", 4, 2, "fp32", controls=("START", "END", "READY")),
        V("implicit", "oldest", 2, 1, "int32", controls=("START", "READY", "CORRID")),
    ]
