"""What the fuzzer needs to know about a model, read from the server's own configuration.

The reference model configures itself from this, so any model that follows the accumulator
contract (README) can be fuzzed, including one the user wrote.
"""
from __future__ import annotations

import math
from fractions import Fraction

import attrs
import numpy as np
from tritonclient.grpc import model_config_pb2 as mc

from modelgen.variants import EXECUTION_OUTPUT, LIVE_ROWS_OUTPUT, ROW_OUTPUT

from .values import CONTROL_TIMEOUT_S, Request

# The dtypes an accumulator's INPUT and OUTPUT may have: Triton's name and numpy's type. A model
# for speech streams keeps INT16 samples, a KV cache FP16: each sums in its own width.
NUMPY_DTYPES = {"INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "INT64": np.int64, "UINT8": np.uint8,
                "UINT16": np.uint16, "UINT32": np.uint32, "UINT64": np.uint64, "FP16": np.float16,
                "FP32": np.float32, "FP64": np.float64}
_DTYPES = {getattr(mc, f"TYPE_{name}"): name for name in NUMPY_DTYPES}


def dtype_range(dtype: str) -> tuple[int, int]:
    """Where a running sum of `dtype` (a key of NUMPY_DTYPES) is exact: an integer type's own
    range, a float type's whole numbers (FP32: to 2**24)."""
    kind = NUMPY_DTYPES[dtype]
    if dtype.startswith("FP"):
        top = 2 ** (np.finfo(kind).nmant + 1)
        return (-top, top)
    info = np.iinfo(kind)
    return (int(info.min), int(info.max))
_KIND = mc.ModelSequenceBatching.Control
DEFAULT_IDLE_US = 1_000_000  # Triton's own default when the config leaves it out
# Fractions an FP32 sum keeps exactly while it stays within FRACTION_LIMIT: multiples of a
# quarter (two bits below the point) up to 2**21 use 23 of float32's 24 significant bits (a float
# dtype of d significant bits: up to 2**(d - 3); ModelSpec.fraction_limit).
FRACTION_LIMIT = 2**21


def same_sum(a, b) -> bool:
    """Two answers agree: equal, or both NaN (an FP32 sum past inf - inf)."""
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))


def same_sums(a, b) -> bool:
    return len(a) == len(b) and all(same_sum(x, y) for x, y in zip(a, b))


def is_fraction(value: float) -> bool:
    return isinstance(value, float) and math.isfinite(value) and value != int(value)


def exact_range(lo: float, hi: float, fractional: bool, limit: float = FRACTION_LIMIT) -> tuple:
    """The range a running sum may be fitted to: the model's, or a narrower one once the sum
    carries a fraction (an FP32 sum then keeps its quarters only up to FRACTION_LIMIT; another
    float dtype up to its own `limit`)."""
    return (max(lo, -limit), min(hi, limit)) if fractional else (lo, hi)


class ContractError(ValueError):
    """The model does not follow the accumulator contract; says what is missing."""


@attrs.frozen
class ModelSpec:
    name: str
    dtype: str  # of INPUT and OUTPUT, a key of NUMPY_DTYPES (INT32, FP16, UINT8 ...)
    strategy: str  # direct or oldest
    slots_per_instance: int
    instances: int
    idle_s: float
    max_batch_size: int
    controls: frozenset  # START END READY CORRID present
    corrid_type: str | None  # UINT64, STRING (or INT32 ...) when a CORRID control exists
    implicit_state: bool
    flavour: str | None = None  # from modelgen's FLAVOUR parameter, when the model has one
    backend: str = ""
    # For an ensemble: its stateful step, whose sequence batcher takes the requests (its errors,
    # and its state, are that model's); "" for a model served on its own.
    step: str = ""
    # Decoupled (model_transaction_policy): Triton serves it over gRPC streams only.
    decoupled: bool = False
    # The sum a sequence starts from: an implicit state read from a data file (its value is the
    # config's INITIAL_SUM parameter), else 0.
    initial_sum: float = 0
    # iterative_sequence: a START runs this many times in its slot (the model reschedules it),
    # answering its running sum each time, and its last release ends the sequence; 0 otherwise.
    iterations: int = 0
    # A split ensemble: a decoupled step in front of the stateful one cuts each request into this
    # many chunks (its value, then 0s), each answered with the running sum; 0 otherwise.
    chunks: int = 0
    # The model answers modelgen's LIVE_ROWS_OUTPUT beside OUTPUT: the live rows of the execution.
    # A diagnostic, not behaviour: a corpus entry recorded before the model said it still replays.
    says_live_rows: bool = attrs.field(default=False, eq=False)
    says_row: bool = attrs.field(default=False, eq=False)  # and ROW_OUTPUT, each request's row in it
    says_execution: bool = attrs.field(default=False, eq=False)  # and EXECUTION_OUTPUT, its execution's serial

    @property
    def batcher(self) -> str:
        """The model whose sequence batcher holds the sequences: the one to reload for a fresh
        copy, and the one the batcher's own refusals name."""
        return self.step or self.name

    @property
    def capacity(self) -> int:
        return self.slots_per_instance * self.instances

    @property
    def id_bits(self) -> int:
        """How many bits of an integer id the model can tell apart: Triton writes the id into a
        32-bit CORRID control cut to its low 32 bits, so ids equal modulo 2**32 reach the model as
        one CORRID. The fuzzer keeps its ids below 2**id_bits."""
        return 32 if self.corrid_type in ("INT32", "UINT32") and "CORRID" in self.controls else 64

    @property
    def is_float(self) -> bool:
        """FP16, FP32 or FP64: a sum rounds (IEEE 754) where an integer one is exact."""
        return self.dtype.startswith("FP")

    @property
    def digits(self) -> int:
        """A float dtype's significant bits (FP16 11, FP32 24, FP64 53): whole numbers up to
        2**digits are exact."""
        return np.finfo(NUMPY_DTYPES[self.dtype]).nmant + 1

    @property
    def fraction_limit(self) -> float:
        """Up to where a sum keeps quarters exactly (FRACTION_LIMIT for FP32)."""
        return 2 ** (self.digits - 3) if self.is_float else 0

    @property
    def largest(self) -> float:
        """A float dtype's largest finite value (FP16 65504)."""
        return float(np.finfo(NUMPY_DTYPES[self.dtype]).max)

    @property
    def sum_range(self) -> tuple[int, int]:
        """Where a running sum of this dtype is exact (FP32: whole numbers to 2**24)."""
        return dtype_range(self.dtype)

    @property
    def value_range(self) -> tuple[int, int]:
        """Range every running sum must stay in for exact answers (FP32: integers to 2**24), and
        every value sent: narrowed by the initial sum, so that a START's sum (initial_sum + its
        value) stays in it too."""
        lo, hi = self.sum_range
        shift = abs(int(self.initial_sum))
        lo, hi = lo + shift, hi - shift
        # an iterative START's sum is its value added `iterations` times
        return (-(-lo // self.iterations), hi // self.iterations) if self.iterations else (lo, hi)

    def add(self, total, value):
        """`total` + `value` as the model sums: a float sum is rounded to its dtype at each
        request (IEEE 754, the same on every backend: past 2**24 an FP32 sum rounds, past its
        largest it is inf, inf - inf is NaN); an integer sum is exact (the generator keeps it in
        range)."""
        if self.is_float:
            kind = NUMPY_DTYPES[self.dtype]
            with np.errstate(over="ignore", invalid="ignore"):  # inf and NaN are answers here
                return float(kind(total) + kind(value))
        return total + value

    def rounds(self, total, value) -> bool:
        """Whether `total` + `value` rounds as the model sums it (add): a float sum that is not
        the exact sum of its operands as sent (each in the dtype), or overflows to inf, where the
        value is at least half the sum's spacing (it could move the sum: far past the exact range
        a small value is absorbed whole, at any precision alike). A model that keeps its state at
        another precision, or sums in another order (pairwise, in lanes, compensated), answers a
        run of such sums otherwise."""
        if not self.is_float:
            return False
        kind = NUMPY_DTYPES[self.dtype]
        with np.errstate(over="ignore"):  # (past the dtype's largest: inf on the wire, and no rounding)
            a, b = float(kind(total)), float(kind(value))
        if not (math.isfinite(a) and math.isfinite(b)):
            return False
        got = self.add(a, b)
        if not math.isfinite(got):
            return True
        spacing = 2.0 ** (math.frexp(a)[1] - self.digits)  # between neighbouring floats of the dtype at `a`
        return Fraction(a) + Fraction(b) != Fraction(got) and 2 * abs(b) >= spacing

    def start_sums(self, value, end: bool) -> tuple:
        """What a START of `value` answers, in order: the initial sum plus the value; an iterative
        START without END runs once per iteration in its slot, adding the value again each time
        (a START with END is not rescheduled)."""
        out, total = [], self.initial_sum
        for _ in range(self.iterations if self.iterations and not end else 1):
            total = self.add(total, value)
            out.append(total)
        return tuple(out)

    def chunk_answers(self, total) -> tuple:
        """A split ensemble's answers before a request's last: one per chunk but the last, each the
        running sum (the chunks after the first carry 0); () for any other model."""
        return (total,) * (self.chunks - 1) if self.chunks > 1 else ()

    def request(self, seq_id, value=0, **flags) -> Request:
        """A request to this model: its name and dtype (unless `flags` say otherwise: a misuse),
        INPUT with a batch dimension when the model has one."""
        flags.setdefault("dtype", self.dtype)
        return Request(self.name, seq_id, value, batch_dim=self.max_batch_size > 0, **flags)

    def describe(self) -> str:
        ctl = ",".join(sorted(self.controls)) or "none"
        corrid = f" CORRID {self.corrid_type}" if self.corrid_type else ""
        state = " implicit-state" if self.implicit_state else ""
        state += f" from {self.initial_sum:g}" if self.initial_sum else ""
        via = (f", an ensemble over {self.step}" if self.step else "") + (", decoupled" if self.decoupled else "")
        via += f", iterative ({self.iterations} executions per START)" if self.iterations else ""
        via += f", each request cut into {self.chunks} chunks" if self.chunks else ""
        return (f"{self.name}: {self.strategy}, {self.slots_per_instance} slot(s) x {self.instances} instance(s), "
                f"{self.dtype}, idle {self.idle_s * 1000:.0f} ms, controls {ctl}{corrid}{state}{via}")

    @classmethod
    def from_config(cls, cfg: mc.ModelConfig) -> "ModelSpec":
        problems = []
        inputs = {t.name: t for t in cfg.input}
        outputs = {t.name: t for t in cfg.output}
        if "INPUT" not in inputs:
            problems.append(f"no input named INPUT (inputs: {sorted(inputs) or 'none'})")
        if "OUTPUT" not in outputs:
            problems.append(f"no output named OUTPUT (outputs: {sorted(outputs) or 'none'})")
        dtype = None
        if not problems:
            i, o = inputs["INPUT"], outputs["OUTPUT"]
            if i.data_type != o.data_type or i.data_type not in _DTYPES:
                problems.append(f"INPUT and OUTPUT must share one data type of {', '.join(NUMPY_DTYPES)}, got "
                                f"{mc.DataType.Name(i.data_type)} and {mc.DataType.Name(o.data_type)}")
            else:
                dtype = _DTYPES[i.data_type]
            for t in (i, o):
                if list(t.dims) != [1]:
                    problems.append(f"{t.name} must have dims [1], got {list(t.dims)}")
        if not cfg.HasField("sequence_batching"):
            problems.append("no sequence_batching in the config")
        if problems:
            raise ContractError(f"model {cfg.name!r} does not follow the accumulator contract: "
                                + "; ".join(problems))

        sb = cfg.sequence_batching
        strategy = "oldest" if sb.HasField("oldest") else "direct"
        if strategy == "oldest":
            slots = max(1, sb.oldest.max_candidate_sequences)
        else:
            slots = max(1, cfg.max_batch_size)
        instances = sum(g.count or 1 for g in cfg.instance_group) or 1
        controls, corrid_type = set(), None
        for ci in sb.control_input:
            for c in ci.control:
                name = {_KIND.CONTROL_SEQUENCE_START: "START", _KIND.CONTROL_SEQUENCE_END: "END",
                        _KIND.CONTROL_SEQUENCE_READY: "READY", _KIND.CONTROL_SEQUENCE_CORRID: "CORRID"}.get(c.kind)
                if name:
                    controls.add(name)
                if name == "CORRID":
                    corrid_type = mc.DataType.Name(c.data_type).removeprefix("TYPE_")
        flavour = cfg.parameters["FLAVOUR"].string_value if "FLAVOUR" in cfg.parameters else None
        return cls(name=cfg.name, dtype=dtype, strategy=strategy, slots_per_instance=slots, instances=instances,
                   idle_s=(sb.max_sequence_idle_microseconds or DEFAULT_IDLE_US) / 1e6,
                   max_batch_size=cfg.max_batch_size, controls=frozenset(controls), corrid_type=corrid_type,
                   implicit_state=len(sb.state) > 0, flavour=flavour, backend=cfg.backend or cfg.platform,
                   decoupled=cfg.model_transaction_policy.decoupled, initial_sum=_initial_sum(cfg, dtype),
                   says_live_rows=LIVE_ROWS_OUTPUT in outputs, says_row=ROW_OUTPUT in outputs,
                   says_execution=EXECUTION_OUTPUT in outputs,
                   iterations=_iterations(cfg))

    @classmethod
    def of_ensemble(cls, cfg: mc.ModelConfig, steps: dict) -> "ModelSpec":
        """An ensemble of one stateful step (`steps`: its steps' configs by name), its other steps
        decoupled ones that cut each request into chunks (a CHUNKS parameter says how many; their
        order is the config's, not checked here), takes the step's sequence batching, under the
        ensemble's name, inputs, outputs and batch size."""
        stateful = [c for c in steps.values() if c.HasField("sequence_batching")]
        fronts = [c for c in steps.values() if not c.HasField("sequence_batching")]
        if len(stateful) != 1 or any(_chunks(c) is None for c in fronts):
            raise ContractError(f"ensemble {cfg.name!r} does not follow the accumulator contract: it needs exactly "
                                f"one step that is a sequence model, and beside it only decoupled steps that say "
                                f"how many chunks they cut a request into (parameter CHUNKS, 2 to 16) "
                                f"(steps: {sorted(steps) or 'none'}, sequence models among them: "
                                f"{sorted(c.name for c in stateful) or 'none'})")
        merged = mc.ModelConfig()
        merged.CopyFrom(stateful[0])
        merged.name, merged.max_batch_size = cfg.name, cfg.max_batch_size
        del merged.input[:], merged.output[:]
        merged.input.extend(cfg.input)
        merged.output.extend(cfg.output)
        spec = attrs.evolve(cls.from_config(merged), step=stateful[0].name)
        if fronts:  # each request answered once per chunk, over streams only
            spec = attrs.evolve(spec, chunks=int(np.prod([_chunks(c) for c in fronts])), decoupled=True)
        return spec

    @classmethod
    def fetch(cls, server, model: str) -> "ModelSpec":
        """Reads the model's configuration from a running server (an ensemble's, and its step's)."""
        client = server.client()
        cfg = _config(server, client, model)
        if cfg.HasField("ensemble_scheduling"):
            steps = {name: _config(server, client, name) for name in ensemble_steps(cfg)}
            return cls.of_ensemble(cfg, steps)
        return cls.from_config(cfg)


def _initial_sum(cfg: mc.ModelConfig, dtype: str) -> float:
    """0 unless the state starts from a data file; then the INITIAL_SUM parameter says its value
    (the file itself cannot be read over the API)."""
    files = [i.data_file for s in cfg.sequence_batching.state for i in s.initial_state if i.data_file]
    if not files:
        return 0
    text = cfg.parameters["INITIAL_SUM"].string_value if "INITIAL_SUM" in cfg.parameters else ""
    try:
        value = int(text)
    except ValueError:
        raise ContractError(f"model {cfg.name!r} starts its state from data file {files[0]!r}: the fuzzer needs "
                            f"the value it holds (one number, each element alike) as parameter INITIAL_SUM, "
                            f"an integer; got {text or 'none'!r}") from None
    kind = NUMPY_DTYPES[dtype]
    if np.issubdtype(kind, np.unsignedinteger) and value:
        # the range every sum and value keeps to is narrowed by the initial sum on both sides
        # (ModelSpec.value_range): an unsigned one would lose its 0 and every value below the sum
        raise ContractError(f"model {cfg.name!r}: INITIAL_SUM {value} on a {dtype} state: the fuzzer takes an "
                            f"unsigned state that starts from 0 only")
    limit = min(2**20, dtype_range(dtype)[1] // 8)  # a range at least three quarters as wide as the dtype's is left
    if abs(value) > limit:
        raise ContractError(f"model {cfg.name!r}: INITIAL_SUM {value} is past +-{limit}, where sums from it stay "
                            f"exact in {dtype}")
    return float(value) if dtype.startswith("FP") else value


def _chunks(cfg: mc.ModelConfig) -> int | None:
    """How many chunks a decoupled ensemble step cuts each request into (its CHUNKS parameter);
    None where it is not such a step."""
    text = cfg.parameters["CHUNKS"].string_value if "CHUNKS" in cfg.parameters else ""
    if not cfg.model_transaction_policy.decoupled or not text.isdigit() or not 2 <= int(text) <= 16:
        return None
    return int(text)


def _iterations(cfg: mc.ModelConfig) -> int:
    """0 unless the model is an iterative sequence; then its ITERATIONS parameter says how many times
    a START runs (the model decides when to stop rescheduling it; the API cannot tell)."""
    if not cfg.sequence_batching.iterative_sequence:
        return 0
    text = cfg.parameters["ITERATIONS"].string_value if "ITERATIONS" in cfg.parameters else ""
    if not text.isdigit() or not 1 <= int(text) <= 16 or not cfg.model_transaction_policy.decoupled:
        raise ContractError(f"model {cfg.name!r} is an iterative sequence: the fuzzer needs it decoupled, and the "
                            f"number of times it runs each START (and answers it) as parameter ITERATIONS, an "
                            f"integer from 1 to 16; got {text or 'none'!r}, "
                            f"{'' if cfg.model_transaction_policy.decoupled else 'not '}decoupled")
    return int(text)


def ensemble_steps(cfg: mc.ModelConfig) -> list[str]:
    """The models an ensemble's config sends its requests through (none for another model)."""
    return [s.model_name for s in cfg.ensemble_scheduling.step]


def _config(server, client, model: str) -> mc.ModelConfig:
    from tritonclient.utils import InferenceServerException

    try:
        return client.get_model_config(model, client_timeout=CONTROL_TIMEOUT_S).config
    except InferenceServerException as err:
        loaded = sorted(m.name for m in client.get_model_repository_index(client_timeout=CONTROL_TIMEOUT_S).models
                        if m.state == "READY")
        raise ContractError(f"cannot read the config of model {model!r} from {server.grpc_url}: "
                            f"{err.message()}; ready models: {loaded}") from None
