"""What a generated accumulator model is: one frozen value per model variant.

A variant fixes everything that changes the sequence batcher's behaviour (strategy, slots,
instances, controls, id type, dtype, shape, batching, idle timeout), how the model keeps its
running sum (its *flavour*) and which Triton backend runs it. The model name spells the variant
out, so a failure report names it.
"""
from __future__ import annotations

import attrs

FLAVOURS = ("corrid", "slot", "implicit")
# The Python and native models' diagnostic output (INT32, OUTPUT's shape): the live (READY) rows
# of the execution that answered. Its name is spelled again in templates/accumulator.py and
# native/accumulator.c, which run inside the server.
LIVE_ROWS_OUTPUT = "SEQFUZZ_LIVE_ROWS"
# Beside it: the row the request had in that execution (0: the first), which the fuzzer's
# coverage reads too (an END in each row of a full execution).
ROW_OUTPUT = "SEQFUZZ_ROW"
# And the execution's serial (Python models): requests answered with one serial ran in one
# execution, so the coverage sees which flags an execution's rows carried together.
EXECUTION_OUTPUT = "SEQFUZZ_EXECUTION"
STRATEGIES = ("direct", "oldest")
DTYPES = ("int32", "fp32")
# INT64 sums: the native backend's only (the framework graphs and the Python set stay 32-bit).
NATIVE_DTYPES = DTYPES + ("int64",)
# The Python model sums in whatever dtype its config declares (numpy's arithmetic, which rounds a
# float sum to its width as IEEE does): the narrow and wide ones stateful models keep (INT16
# audio samples, an FP16 cache) on that backend only.
PYTHON_DTYPES = NATIVE_DTYPES + ("int8", "int16", "uint8", "uint16", "uint32", "uint64", "fp16", "fp64")
# Every CORRID type Triton takes. int32 is also what TensorRT needs (it has no uint64 tensors:
# Triton's own TRT QA models do the same). Triton writes an integer id into a 32-bit CORRID cut to
# its low 32 bits, and into INT64 as its two's complement (ids from 2**63 arrive negative).
CORRID_TYPES = ("uint64", "string", "int32", "uint32", "int64")
CONTROLS = ("START", "END", "READY", "CORRID")
# native: modelgen's own C backend (modelgen/native), which the embedded server loads beside the
# Python one, so implicit state runs live without a framework backend.
BACKENDS = ("python", "onnx", "tensorflow", "tensorrt", "native")
# Name prefixes; python keeps the "py" the fuzzer already knows, the rest must not collide
# (tensorflow and tensorrt share their first two letters).
_PREFIX = {"python": "py", "onnx": "onnx", "tensorflow": "tf", "tensorrt": "trt", "native": "nat"}
_CORRID_SUFFIX = {"uint64": "u64", "string": "str", "int32": "i32", "uint32": "u32", "int64": "i64"}
# The framework graphs declare CORRID with one fixed type; TensorRT has no uint64 tensors.
_CORRID_TYPES_OF = {"python": ("uint64", "string", "int32", "uint32", "int64"), "onnx": ("uint64",), "tensorflow": ("uint64",),
                    "tensorrt": ("int32",), "native": CORRID_TYPES}

# Short enough that a fuzz step that waits past it costs well under a second.
DEFAULT_IDLE_US = 500_000
# Idle timeouts per purpose: the many-slot models are for sums under load (throughput, batching),
# where a short timeout only makes the fuzzer wait; 2 s puts the idle window (timeout + late
# margin) past the fuzzer's max_wait_s, so it leaves idle expiry to the short-timeout models.
SUM_HEAVY_IDLE_US = 2_000_000
# An initial state from data stays small: every sum from it must be exact in fp32 (2**24).
MAX_INITIAL_SUM = 2**20


def _check_shape(instance, attribute, value):
    if not value or not all(isinstance(d, int) and d > 0 for d in value):
        raise ValueError(f"shape must be a non-empty tuple of positive ints, got {value!r}")


def _check_controls(instance, attribute, value):
    unknown = set(value) - set(CONTROLS)
    if unknown:
        raise ValueError(f"unknown control input(s) {sorted(unknown)}; known: {CONTROLS}")


@attrs.frozen
class Variant:
    """One stateful accumulator model.

    slots: sequence slots per instance (max_batch_size under direct, max_candidate_sequences
    under oldest). controls: which sequence control inputs the config declares.
    batching: False gives max_batch_size 0, so tensors carry no batch dimension.
    shape: dims of INPUT, OUTPUT and the state, without the batch dimension.
    """

    flavour: str = attrs.field(validator=attrs.validators.in_(FLAVOURS))
    strategy: str = attrs.field(validator=attrs.validators.in_(STRATEGIES))
    slots: int = attrs.field(validator=attrs.validators.in_((1, 2, 4)))
    instances: int = attrs.field(validator=attrs.validators.in_((1, 2)))
    dtype: str = attrs.field(default="int32", validator=attrs.validators.in_(PYTHON_DTYPES))
    corrid_type: str = attrs.field(default="uint64", validator=attrs.validators.in_(CORRID_TYPES))
    controls: tuple = attrs.field(default=("START", "READY"), converter=tuple, validator=_check_controls)
    idle_us: int = attrs.field(default=DEFAULT_IDLE_US)
    backend: str = attrs.field(default="python", validator=attrs.validators.in_(BACKENDS))
    batching: bool = True
    shape: tuple = attrs.field(default=(1,), converter=tuple, validator=_check_shape)
    # Python backend only: execute() sleeps this long per batch, so that requests queue, batches
    # fill and the backlog builds up (the nemesis's slow execution).
    delay_ms: int = 0
    # START, END and READY as TYPE_BOOL controls (bool_false_true) instead of INT32 0/1.
    bool_controls: bool = False
    # Served through an ensemble: the model named `name` is an ensemble of one step, the stateful
    # accumulator `step_name`, which gets the ensemble request's sequence id and flags.
    ensemble: bool = False
    # Decoupled (model_transaction_policy): each answer goes through the request's response
    # sender, flagged final; Triton then serves the model over gRPC streams only.
    decoupled: bool = False
    # iterative_sequence (the scheduling LLM servers use for in-flight batching): a START without
    # END runs this many times in its slot, the model rescheduling it and answering each running
    # sum, the last one final; its last release ends the sequence. 0: not iterative.
    iterations: int = 0
    # The oldest strategy's own dynamic batching: batch sizes it prefers, and how long the oldest
    # request may wait for one (0: a batch goes as soon as the batcher is free).
    preferred_batch: tuple = attrs.field(default=(), converter=tuple)
    queue_delay_us: int = 0
    # Implicit-state options (L0_implicit_state). initial_sum: the state a sequence starts from,
    # read by Triton from a data file (0: zero_data); the model then adds the state at START too,
    # relying on Triton to hand it the file's value there. same_buffer: one buffer for INPUT_STATE
    # and OUTPUT_STATE (use_same_buffer_for_input_output). growable: that buffer in growable CUDA
    # memory (use_growable_memory).
    initial_sum: int = 0
    same_buffer: bool = False
    growable: bool = False
    # A second state (INPUT_STATE_B -> OUTPUT_STATE_B, native only) kept equal to the first: the
    # model answers 2 * state - state_b, so a core that hands one of a slot's states stale or from
    # another slot shows in the sum.
    two_states: bool = False
    # A split ensemble (ensemble=True): a decoupled native step in front of the accumulator cuts
    # each request into this many chunks (modelgen/native/split.c: INPUT, then 0), saying each
    # chunk's sequence flags with response parameters, as a front end that cuts a stream into frames
    # does; each request is answered once per chunk. 0: the ensemble's one step is the accumulator.
    chunks: int = 0

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
        if self.delay_ms < 0 or (self.delay_ms and self.backend != "python"):
            raise ValueError(f"delay_ms must be >= 0 and only the python backend takes it, got {self.delay_ms} "
                             f"for backend {self.backend!r}")
        if self.backend != "python" and self.flavour != "implicit":
            # Framework graphs (and the native backend) keep no state between executions; Triton
            # must carry it.
            raise ValueError(f"backend {self.backend!r} only has the 'implicit' flavour, not {self.flavour!r}")
        if self.shape != (1,) and self.flavour != "implicit":
            raise ValueError(f"flavour {self.flavour!r} keeps a scalar sum; shape must be (1,), got {self.shape}")
        if not self.batching and self.strategy == "direct" and self.slots != 1:
            # Without batching a direct instance has exactly one batch slot.
            raise ValueError("batching=False with strategy 'direct' needs slots=1")
        if (self.preferred_batch or self.queue_delay_us) and self.strategy != "oldest":
            raise ValueError("preferred_batch and queue_delay_us are the oldest strategy's")
        if any(not 0 < b <= self.max_batch_size for b in self.preferred_batch) or self.queue_delay_us < 0:
            # Triton refuses a preferred size past max_batch_size (so any, without batching)
            raise ValueError(f"preferred_batch sizes must be in 1..max_batch_size ({self.max_batch_size}) and "
                             f"queue_delay_us >= 0, got {self.preferred_batch} and {self.queue_delay_us}")
        if self.decoupled and self.backend != "python":
            raise ValueError("decoupled: only the python accumulator answers through a response sender")
        if self.iterations and not (self.decoupled and self.flavour == "corrid" and 1 < self.iterations <= 16):
            # Rescheduling is the Python backend's, answering more than once a decoupled model's;
            # the model counts a START's executions by its CORRID.
            raise ValueError(f"iterations must be 2..16 and needs a decoupled corrid variant, got {self.iterations} "
                             f"for a {'decoupled ' if self.decoupled else ''}{self.flavour} variant")
        if self.ensemble and self.backend != "python":
            raise ValueError("ensemble: only python variants are written as an ensemble's step")
        if self.chunks:
            self._check_split()
        if self.two_states and not (self.backend == "native" and self.flavour == "implicit"):
            raise ValueError("two_states: only the native backend's implicit-state models declare a second state")
        takes = {"python": PYTHON_DTYPES, "native": NATIVE_DTYPES}.get(self.backend, DTYPES)
        if self.dtype not in takes:
            raise ValueError(f"dtype {self.dtype!r}: the {self.backend!r} backend takes {takes}")
        if self.bool_controls and self.backend not in ("python", "native"):
            raise ValueError(f"bool_controls: the {self.backend!r} graphs take INT32 controls")
        self._check_state_options()
        if "CORRID" in self.controls and self.corrid_type not in _CORRID_TYPES_OF[self.backend]:
            raise ValueError(f"CORRID type {self.corrid_type!r} does not fit backend {self.backend!r}; "
                             f"it takes {_CORRID_TYPES_OF[self.backend]}")

    def _check_split(self):
        """The split step reads one INT32 INPUT without a batch dimension and tells the accumulator
        the request's integer correlation id (a string id has none to say)."""
        fits = (self.chunks == 2 and self.ensemble and not self.batching and self.dtype == "int32"
                and self.flavour == "corrid" and self.corrid_type == "uint64" and not self.decoupled)
        if not fits:
            raise ValueError("chunks: 2, on an ensemble of a corrid variant with an int32 sum, a uint64 CORRID, no "
                             f"batching and no decoupled accumulator; got chunks={self.chunks}")

    def _check_state_options(self):
        if (self.initial_sum or self.same_buffer or self.growable) and self.flavour != "implicit":
            raise ValueError(f"initial_sum, same_buffer and growable are implicit-state options; "
                             f"flavour {self.flavour!r} keeps no implicit state")
        if not abs(self.initial_sum) <= MAX_INITIAL_SUM:
            raise ValueError(f"initial_sum must be within +-{MAX_INITIAL_SUM} (exact in fp32), got {self.initial_sum}")
        # Triton's own rules (sequence_state.cc): it refuses growable memory without the single
        # buffer, and on other than KIND_GPU instances (only the tensorrt variants run on GPU).
        if self.growable and not self.same_buffer:
            raise ValueError("growable needs same_buffer: Triton refuses use_growable_memory without "
                             "use_same_buffer_for_input_output")
        if self.growable and self.backend != "tensorrt":
            raise ValueError(f"growable: Triton takes use_growable_memory on KIND_GPU instances only; of the "
                             f"backends here only tensorrt runs on GPU, not {self.backend!r}")

    @property
    def resets_on_start(self) -> bool:
        """The model itself ignores the state at START; with an initial state from data it adds
        the state there too, and Triton must hand it the initial value."""
        return not self.initial_sum

    @property
    def says_live_rows(self) -> bool:
        """The model answers LIVE_ROWS_OUTPUT: the Python and native models, where every row it
        is given is live or READY says which are not (direct pads a batch with empty rows)."""
        return self.backend in ("python", "native") and (self.strategy == "oldest" or "READY" in self.controls)

    @property
    def says_execution(self) -> bool:
        """The model answers EXECUTION_OUTPUT too (the Python models that say their rows)."""
        return self.says_live_rows and self.backend == "python"

    @property
    def name(self) -> str:
        ctl = "".join(c[0].lower() for c in CONTROLS if c in self.controls)
        parts = [_PREFIX[self.backend], self.flavour, self.strategy, f"s{self.slots}", f"i{self.instances}",
                 self.dtype, f"c{ctl}"]
        if "CORRID" in self.controls:
            parts.append(_CORRID_SUFFIX[self.corrid_type])
        # Only non-default shape/batching add to the name, so python names stay as they were.
        if self.shape != (1,):
            parts.append("d" + "x".join(map(str, self.shape)))
        if not self.batching:
            parts.append("nb")
        if self.delay_ms:
            parts.append(f"slow{self.delay_ms}ms")
        if self.bool_controls:
            parts.append("bool")
        if self.preferred_batch:
            parts.append("pb" + "-".join(map(str, self.preferred_batch)))
        if self.queue_delay_us:
            parts.append(f"qd{self.queue_delay_us}us")
        if self.initial_sum:
            parts.append(f"init{self.initial_sum}".replace("-", "m"))
        if self.same_buffer:
            parts.append("sb")
        if self.growable:
            parts.append("grow")
        if self.two_states:
            parts.append("2st")
        if self.decoupled:
            parts.append("dec")
        if self.iterations:
            parts.append(f"iter{self.iterations}")
        if self.ensemble:
            parts.append("ens")
        if self.chunks:
            parts.append(f"split{self.chunks}")
        return "_".join(parts)

    @property
    def step_name(self) -> str:
        """The stateful model behind an ensemble (it is not fuzzed on its own: every request it
        gets comes through the ensemble)."""
        return f"{self.name}_step"

    @property
    def split_name(self) -> str:
        """A split ensemble's first step, the decoupled native model that cuts requests into chunks."""
        return f"{self.name}_split"

    @property
    def model_names(self) -> tuple:
        """Every model folder the variant writes."""
        if self.chunks:
            return (self.name, self.split_name, self.step_name)
        return (self.name, self.step_name) if self.ensemble else (self.name,)

    @property
    def min_triton(self) -> tuple:
        """The oldest Triton that loads it (see needs)."""
        return max((version for version, _ in self.needs), default=(0,))

    @property
    def needs(self) -> tuple:
        """(oldest Triton, why) for each config field an older build would refuse (and with it the
        whole server): iterative_sequence came with 2.40 (core r23.11); 2.39 has no
        use_same_buffer_for_input_output, which 2.41 takes."""
        out = []
        if self.iterations:
            out.append(((2, 40), "iterative_sequence came with Triton 2.40"))
        if self.same_buffer:
            out.append(((2, 41), "use_same_buffer_for_input_output: not in 2.39's config (2.41 takes it)"))
        return tuple(out)

    @property
    def total_slots(self) -> int:
        return self.slots * self.instances

    @property
    def max_batch_size(self) -> int:
        return self.slots if self.batching else 0


def _major_minor(triton_version: str) -> tuple:
    return tuple(int(n) for n in triton_version.split(".")[:2])


def left_out_on(variants, triton_version: str | None) -> list[tuple]:
    """(variant, why) for each variant a Triton of that version would refuse (None: any loads all)."""
    if triton_version is None:
        return []
    have = _major_minor(triton_version)
    return [(v, "; ".join(why for version, why in v.needs if version > have)) for v in variants if v.min_triton > have]


def loadable_on(variants, triton_version: str | None) -> list[Variant]:
    """The variants a Triton of that version loads (None: any); an older build refuses a newer
    model's config at start, and with it the whole server."""
    if triton_version is None:
        return list(variants)
    have = _major_minor(triton_version)
    return [v for v in variants if v.min_triton <= have]


def python_variants(idle_us: int | None = None) -> list[Variant]:
    """A covering set rather than the full product (which would start ~200 stub processes).

    Every flavour meets both strategies, every slot count, both instance counts and INT32 and
    FP32 sums; three more models sum FP16, INT16 and UINT8;
    the corrid flavour meets every CORRID type Triton takes (UINT64, STRING, INT32, UINT32,
    INT64); END is declared by some models and not others; one model has no batch dimension
    (max_batch_size 0); one takes its START, END and READY controls as BOOL; one is served
    through an ensemble; one is decoupled, and one decoupled and iterative; one sets the oldest strategy's preferred batch sizes
    and queue delay.
    idle_us: one idle timeout for every model; None gives each its purpose's (short for the
    expiry-heavy models, SUM_HEAVY_IDLE_US for three of the many-slot ones).
    """
    V = lambda *a, **k: Variant(*a, idle_us=idle_us or DEFAULT_IDLE_US, **k)  # noqa: E731
    S = lambda *a, **k: Variant(*a, idle_us=idle_us or SUM_HEAVY_IDLE_US, **k)  # noqa: E731
    full = ("START", "END", "READY", "CORRID")
    return [
        V("corrid", "direct", 1, 1, "int32", "uint64", full),
        V("corrid", "direct", 4, 2, "fp32", "uint64", ("START", "END", "CORRID")),
        V("corrid", "direct", 2, 1, "fp32", "string", full),
        V("corrid", "oldest", 2, 1, "int32", "string", ("START", "READY", "CORRID")),
        # max_batch_size 0: no batch dimension, one request per execution; two sequences still
        # share the instance (Triton QA's "nobatch" sequence models).
        V("corrid", "oldest", 2, 1, "int32", "uint64", full, batching=False),
        # with the oldest strategy's own batching knobs (L0_sequence_batcher's queue delay): batches
        # of 2 or 4 preferred, the oldest request waiting up to 2 ms for one
        S("corrid", "oldest", 4, 2, "int32", "uint64", full, preferred_batch=(2, 4), queue_delay_us=2000),
        # CORRID of the other integer types (L0_sequence_corrid_batcher), one with BOOL controls.
        V("corrid", "direct", 2, 1, "int32", "int32", full, bool_controls=True),
        V("corrid", "oldest", 2, 1, "fp32", "uint32", ("START", "END", "CORRID")),
        V("corrid", "direct", 2, 2, "int32", "int64", ("START", "READY", "CORRID")),
        V("slot", "direct", 1, 1, "int32", controls=("START", "READY")),
        V("slot", "direct", 2, 2, "fp32", controls=("START", "END", "READY")),
        S("slot", "direct", 4, 1, "int32", controls=("START", "END", "READY", "CORRID")),
        V("slot", "oldest", 1, 2, "int32", controls=("START", "READY")),
        V("implicit", "direct", 1, 1, "int32", controls=("START", "READY")),
        S("implicit", "direct", 4, 2, "fp32", controls=("START", "END", "READY")),
        V("implicit", "oldest", 2, 1, "int32", controls=("START", "READY", "CORRID")),
        # An ensemble whose one step is a stateful model (ensemble scheduling lives in Triton's
        # core): per-slot state under the oldest strategy, which server issue 7117 saw leak
        # between sequences through an ensemble.
        V("slot", "oldest", 1, 1, "int32", controls=("START", "END", "READY"), ensemble=True),
        # A decoupled stateful model: its answers come through a response sender.
        V("corrid", "direct", 2, 1, "int32", "uint64", full, decoupled=True),
        # An iterative sequence (Triton 2.40+; older builds leave it out): each START runs three
        # times in its slot, answering each running sum, and ends its sequence.
        V("corrid", "direct", 2, 1, "int32", "uint64", full, decoupled=True, iterations=3),
        # Narrow and half-precision sums: FP16 (a cache's), INT16 (audio samples), UINT8 (no
        # negative sum, 255 at most).
        V("corrid", "direct", 2, 1, "fp16", "uint64", full),
        V("slot", "direct", 2, 1, "int16", controls=("START", "END", "READY")),
        V("corrid", "oldest", 2, 1, "uint8", "uint64", full),
    ]


def slow_variants(idle_us: int = DEFAULT_IDLE_US, delay_ms: int = 100) -> list[Variant]:
    """Slow models for the nemesis: each execution takes `delay_ms`, so concurrent requests queue
    behind it and arrive as full batches. One per strategy, with several slots and END."""
    V = lambda *a, **k: Variant(*a, idle_us=idle_us, delay_ms=delay_ms, **k)  # noqa: E731
    return [
        V("slot", "direct", 4, 1, "int32", controls=("START", "END", "READY")),
        V("corrid", "oldest", 2, 1, "int32", "uint64", ("START", "END", "READY", "CORRID")),
    ]


def native_variants(idle_us: int | None = None) -> list[Variant]:
    """Implicit-state models on the native backend, which the embedded server serves: the core's
    state handling live. A covering set: both strategies, 1-4 slots, one and two instances, both
    dtypes, no batch dimension, the zero state and a state from a data file, the single state
    buffer, two states in one model, BOOL controls, an INT64 state, and CORRID types the other
    implicit models lack.
    idle_us: as for python_variants."""
    V = lambda *a, **k: Variant(*a, idle_us=idle_us or DEFAULT_IDLE_US, backend="native", **k)  # noqa: E731
    S = lambda *a, **k: Variant(*a, idle_us=idle_us or SUM_HEAVY_IDLE_US, backend="native", **k)  # noqa: E731
    full = ("START", "END", "READY", "CORRID")
    return [
        V("implicit", "direct", 1, 1, "int32", controls=("START", "READY"), batching=False, same_buffer=True),
        S("implicit", "direct", 4, 2, "fp32", controls=("START", "END", "READY"), two_states=True),
        V("implicit", "oldest", 2, 1, "int64", "uint64", full, initial_sum=INITIAL_SUM),
        V("implicit", "oldest", 4, 1, "fp32", "uint32", full, bool_controls=True, initial_sum=INITIAL_SUM,
          same_buffer=True),
    ]


# The one Python-backend implicit-state model of the default set: it pins the documented limit
# (that backend drops implicit state); the native models fuzz implicit state itself.
PINNED_PYTHON_IMPLICIT = "py_implicit_direct_s1_i1_int32_csr"


def split_variants(idle_us: int | None = None) -> list[Variant]:
    """A split ensemble: a native decoupled step cuts each request into two chunks (its value,
    then 0, with the request's sequence flags said as response parameters) in front of a Python
    accumulator, as a speech pipeline's front end cuts a stream into frames for the stateful model
    behind it; every request is answered twice. Without batching (the split step takes one
    request's INPUT at a time), under the oldest strategy's two sequences."""
    return [Variant("corrid", "oldest", 2, 1, "int32", "uint64", ("START", "END", "READY", "CORRID"),
                    idle_us=idle_us or DEFAULT_IDLE_US, batching=False, ensemble=True, chunks=2)]


def default_variants(idle_us: int | None = None, native: bool = True) -> list[Variant]:
    """The repository `pytest fuzz/` serves when given none: the Python set without the
    implicit-state models that would only show the Python backend's limit again, the native
    implicit-state models and the split ensemble (native=False where no C compiler can build
    their backends)."""
    python = [v for v in python_variants(idle_us) if v.flavour != "implicit" or v.name == PINNED_PYTHON_IMPLICIT]
    return python + (native_variants(idle_us) + split_variants(idle_us) if native else [])


IMPLICIT_BACKENDS = ("onnx", "tensorflow", "tensorrt", "native")
# Batched models take 4 sequences per instance; both strategies use all 4 (direct: batch slots,
# oldest: candidate sequences). Without batching, oldest still interleaves 2 sequences.
_IMPLICIT_SLOTS = {(True, "direct"): 4, (True, "oldest"): 4, (False, "direct"): 1, (False, "oldest"): 2}


def implicit_variants(backend: str, dtypes=DTYPES, shape=(1,), batching=(True, False), strategies=STRATEGIES,
                      idle_us: int = DEFAULT_IDLE_US) -> list[Variant]:
    """Implicit-state accumulators for a framework backend, like Triton's own
    gen_qa_dyna_sequence_implicit_models: every dtype x batching x strategy, then per dtype the
    state options (state_option_variants).

    direct models take START and READY; oldest ("dyna") models also take END and CORRID, as
    a model batched by the oldest strategy needs to tell its sequences apart.
    """
    if backend not in IMPLICIT_BACKENDS:
        raise ValueError(f"implicit_variants is for {IMPLICIT_BACKENDS}, not {backend!r} (see python_variants)")
    for name, given, known in (("dtype", dtypes, DTYPES), ("strategy", strategies, STRATEGIES),
                               ("batching", batching, (True, False))):
        if not given or set(given) - set(known):
            raise ValueError(f"{name} must be a non-empty subset of {known}, got {given!r}")
    out = [_implicit(backend, dtype, batched, strategy, shape, idle_us)
           for dtype in dtypes for batched in batching for strategy in strategies]
    for dtype in dtypes:
        out += state_option_variants(backend, dtype, shape, batching[0], strategies, idle_us)
    return out


# The initial state the option variants read from their data file: not 0, so a START that got
# the zero state (or a stale one) shows in its sum.
INITIAL_SUM = 7


def state_option_variants(backend: str, dtype: str = "int32", shape=(1,), batched: bool = True,
                          strategies=STRATEGIES, idle_us: int = DEFAULT_IDLE_US) -> list[Variant]:
    """The implicit-state options of L0_implicit_state: an initial state from a data file, the
    single state buffer, and both together (on TensorRT, the only GPU backend here, in growable
    memory as well). None for tensorflow: Triton's TensorFlow backend carries no implicit state,
    so its options would never run."""
    if backend == "tensorflow":
        return []
    first, last = strategies[0], strategies[-1]
    return [_implicit(backend, dtype, batched, first, shape, idle_us, initial_sum=INITIAL_SUM),
            _implicit(backend, dtype, batched, last, shape, idle_us, same_buffer=True),
            _implicit(backend, dtype, batched, last, shape, idle_us, initial_sum=INITIAL_SUM, same_buffer=True,
                      growable=backend == "tensorrt")]


def _implicit(backend, dtype, batched, strategy, shape, idle_us, **options) -> Variant:
    corrid_type = "int32" if backend == "tensorrt" else "uint64"
    controls = ("START", "READY") if strategy == "direct" else ("START", "END", "READY", "CORRID")
    return Variant("implicit", strategy, _IMPLICIT_SLOTS[batched, strategy], 1, dtype, corrid_type, controls, idle_us,
                   backend, batched, tuple(shape), **options)
