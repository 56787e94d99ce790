"""Known divergences: places where a Triton build breaks a promise the reference model keeps.

They are findings, not exceptions in the model. Each names the builds it was seen on, which
models it affects and its symptom. Tests and the fuzzer use this table to keep a known
divergence visible (expected, reported) and to fail loudly when a build stops showing it.
Predicates take a modelgen Variant or a fuzz.spec.ModelSpec.
"""
from __future__ import annotations

from typing import Callable

import attrs

from .verdicts import DECOUPLED_CANCEL_CRASH, FINAL_ALONE, FINAL_ALONE_CRASH, OVERTAKES, START_RAN_FIRST


def _corrid_type(m) -> str | None:
    if hasattr(m, "corrid_type") and "CORRID" in m.controls:
        return (m.corrid_type or "").upper()
    return None


def _python_implicit(m) -> bool:
    backend = getattr(m, "backend", "")
    implicit = getattr(m, "implicit_state", None)
    if implicit is None:
        implicit = m.flavour == "implicit"
    return backend == "python" and implicit


def _decoupled_iterative(m) -> bool:
    """An iterative model whose STARTs stream their answers (a ModelSpec of one, or a Variant)."""
    return bool(getattr(m, "iterations", 0)) and bool(getattr(m, "decoupled", True))


def _decoupled_not_iterative(m) -> bool:
    """A decoupled model whose requests are answered once, no ensemble (a ModelSpec or a Variant:
    a split ensemble's spec says decoupled, its Variant does not; none was measured)."""
    return bool(getattr(m, "decoupled", False)) and not getattr(m, "iterations", 0) and not _ensemble(m) \
        and getattr(m, "chunks", 0) <= 1


def _dies_beside_a_backlog(m) -> bool:
    """The models iterative-beside-backlog-crash was seen to kill a shared server with: the
    decoupled iterative one, and a split ensemble. A ModelSpec or a Variant."""
    return _decoupled_iterative(m) or getattr(m, "chunks", 0) > 1


def _may_key_by_corrid(m) -> bool:
    """A model that can keep its state by CORRID: it has the control, and is not one of modelgen's
    that keeps it by slot, nor one with Triton's implicit state (kept per sequence). A split
    ensemble has start-behind-end-runs-first instead. A ModelSpec or a Variant."""
    implicit = getattr(m, "implicit_state", False) or getattr(m, "flavour", None) == "implicit"
    return _corrid_type(m) is not None and not implicit and getattr(m, "flavour", None) != "slot" \
        and getattr(m, "chunks", 0) <= 1


def _ensemble(m) -> bool:
    """An ensemble: a modelgen Variant says so, a ModelSpec names its stateful step."""
    return bool(getattr(m, "ensemble", False) or getattr(m, "step", ""))


@attrs.frozen
class KnownDivergence:
    key: str
    summary: str
    versions: tuple  # Triton versions on which it was observed
    symptom: str  # what comes back instead
    affects: Callable = attrs.field(repr=False)
    invariant: str = ""  # the invariant the fuzzer reports it under
    also_under: tuple = ()  # other invariants it shows under, where another rule meets it first
    signatures: tuple = ()  # texts one of which the observed answer contains, where the invariant is too broad
    # texts one of which the violation's detail contains: where the checker, not the answer, tells it
    # apart (it saw how the answer came to be: verdicts.start_ran_first)
    details: tuple = ()
    # and texts one of which the expected answer contains (what was due: a refusal, not a hang)
    expected_signatures: tuple = ()
    # set when the fuzzer steers around it: it must not generate it (it would take the server down),
    # or its checker allows for it (stats_agree's Lenience)
    guard: str = ""
    no_string_ids: bool = False  # the guard: the fuzzer sends this model integer ids only
    no_nul_ids: bool = False  # the guard: no string id with an embedded NUL
    # Once a campaign has seen it, the reference may take the build's behaviour as given and fuzz
    # on (FuzzSettings.accept): the name of that behaviour in the reference model (AS_BUILT), or ""
    # where none is modelled (the campaign then stops at it).
    as_built: str = ""
    # the nemesis fault it takes (FuzzSettings.nemesis): a campaign without it cannot meet it
    needs_fault: str = ""
    # it shows by chance only, where it applies (a race a model may never lose): a campaign that does not
    # meet it says nothing of the build (not "pass, known divergence not seen")
    race: bool = False
    # it kills a server its model shares with another model's traffic: where workers fuzz two
    # models at a time on one server (xdist), a model it affects gets a server of its own
    alone: bool = False
    # a nemesis fault that meets it though the guard holds (the guard keeps a default rule off it):
    # a campaign with that fault expects it
    met_despite_guard: str = ""

    def applies(self, model, version: str | None) -> bool:
        return version in self.versions and self.affects(model)

    def explains(self, invariant: str, got: str, expected: str = "", detail: str = "") -> bool:
        """Whether a violation (its invariant, what came back, what was due and what the checker
        said of it) is this divergence."""
        if self.expected_signatures and not any(s in expected for s in self.expected_signatures):
            return False
        if self.details and not any(d in detail for d in self.details):
            return False
        if self.signatures:
            return any(s in got for s in self.signatures)
        return invariant == self.invariant or invariant in self.also_under


KNOWN = (
    KnownDivergence(
        "python-backend-drops-implicit-state",
        "The Python backend does not carry sequence_batching.state: every request sees the initial "
        "INPUT_STATE and OUTPUT_STATE is dropped, so OUTPUT is INPUT instead of the running sum.",
        versions=("2.36.0", "2.39.0", "2.41.0", "2.44.0", "2.46.0", "2.51.0"),
        symptom="OUTPUT equals the request's own INPUT",
        # share_sequence's answers are then no running sums of any arrival order
        affects=_python_implicit, invariant="sums_match", also_under=("order_kept",), as_built="carries_no_state"),
    KnownDivergence(
        "string-corrid-control-rejected",
        "A model whose CORRID control is TYPE_STRING fails every sequence request, string or integer "
        "id, under both strategies: 2.51 refuses it; 2.36 to 2.46 hand the Python model a CORRID "
        "bytes tensor with a garbage length prefix, which it cannot deserialize.",
        versions=("2.36.0", "2.39.0", "2.41.0", "2.44.0", "2.46.0", "2.51.0"),
        symptom="2.51: INVALID_ARGUMENT: unexpected number of string elements 2 for inference input 'CORRID', "
                "expecting 1; 2.36-2.46: the model fails with 'unpack_from requires a buffer of at least "
                "<~2^31> bytes ... (actual buffer size is 132)'",
        affects=lambda m: _corrid_type(m) == "STRING", invariant="valid_is_accepted",
        signatures=("unexpected number of string elements 2 for inference input 'CORRID'",
                    # the same garbage length prefix, read by the server (a 128-character id, 2.51)
                    "incomplete string data for inference input 'CORRID'",
                    "unpack_from requires a buffer of at least")),
    KnownDivergence(
        "string-id-on-uint64-corrid",
        "A string sequence_id sent to a model with a uint64 CORRID control is accepted and its bytes "
        "land in the 8-byte CORRID tensor: ids shorter than 8 characters give a CORRID that changes "
        "between requests of one sequence (its state is lost), 109-110 characters are refused with "
        "'unknown request', 111-128 abort tritonserver (SIGABRT from std::__throw_length_error), and "
        "short ids have also aborted it. On 2.46 (the release matrix) a short string id over HTTP went "
        "unanswered, and the server then died ('free(): invalid size'). On 2.44, which refuses a string "
        "id's START ('not an unsigned int': string-ids-refused), the requests that are not refused go on "
        "the same way: over unary gRPC a 64-character id without flags and a 110-character START went "
        "unanswered, and the server aborted ('malloc(): unaligned tcache chunk detected'; in a campaign "
        "'corrupted size vs. prev_size'). Found by benchmarks.rediscovery with string-ids-refused's "
        "guard off, then by hand.",
        versions=("2.44.0", "2.46.0", "2.51.0"),
        symptom="wrong running sums, no answer, or the server dies (UNAVAILABLE: Stream removed)",
        affects=lambda m: _corrid_type(m) == "UINT64", invariant="sums_match", also_under=("no_hangs", "server_alive"),
        guard="no string ids are sent to this model (its CORRID is uint64)", no_string_ids=True),
    KnownDivergence(
        "string-id-on-integer-corrid",
        "A string sequence_id sent to a model whose CORRID control is INT32, UINT32 or INT64 is written "
        "into that tensor unchecked, its 4-byte length prefix first and its characters past the "
        "tensor's end (core r24.10 SetControlTensors; refused from r25.01, core eeb283a). On an INT32 "
        "CORRID the model sees the string's length as the CORRID: string ids of one length share a "
        "sequence's state ('abc' summed onto 'xyz'). On 2.36, 2.44 and 2.46 the overrun corrupts the "
        "heap and the server dies within a few such requests (found by the release matrix: SIGSEGV in "
        "TRITONBACKEND_RequestInputName or InputBuffer on 2.36 and 2.44, SIGABRT 'free(): invalid next "
        "size' on 2.46).",
        versions=("2.36.0", "2.44.0", "2.46.0", "2.51.0"),
        symptom="wrong running sums (on INT64 the CORRID holds the length and 4 characters); on 2.36-2.46 "
                "the server dies",
        affects=lambda m: _corrid_type(m) in ("INT32", "UINT32", "INT64"), invariant="sums_match",
        # 2.51 too, unguarded (benchmarks.rediscovery): SIGABRT, or no answer at all, on an INT64 CORRID
        also_under=("server_alive", "no_hangs"),
        guard="no string ids are sent to this model (its CORRID is a 32- or 64-bit integer, which a string "
              "id overflows)", no_string_ids=True),
    KnownDivergence(
        "string-ids-refused",
        "Triton 2.39 and 2.41 refuse every string sequence_id on a model without a TYPE_STRING CORRID "
        "control (no CORRID at all, or a uint64 one), START included; 2.51 accepts them. Found by the "
        "release matrix (python -m fuzz.matrix: 0.4.2 and 0.5.0 against 0.7.0); 2.36 and 2.44 refuse "
        "them too.",
        versions=("2.36.0", "2.39.0", "2.41.0", "2.44.0"),
        symptom="INVALID_ARGUMENT: correlation ID in request is not an unsigned int",
        affects=lambda m: _corrid_type(m) != "STRING", invariant="valid_is_accepted",
        signatures=("correlation ID in request is not an unsigned int",),
        guard="no string ids are sent to this model (this build takes only integer ids)", no_string_ids=True),
)

KNOWN = KNOWN + (
    KnownDivergence(
        "cancelled-backlog-id-lingers",
        "Cancelling a START that waits in the backlog does not free its id: until a slot next frees "
        "and the batcher drops the dead backlog entry, a request to that id (with or without START) "
        "is queued behind it and then fails CANCELLED, instead of the START-flag error. On 2.39 and "
        "2.41 too (the release matrix replayed a 2.39 reproducer on all three), and 2.44 and 2.46 "
        "(probed live): every build that cancels.",
        versions=("2.39.0", "2.41.0", "2.44.0", "2.46.0", "2.51.0"), symptom="CANCELLED with an empty message, after the next slot frees",
        # it waits for that slot: a hang, if none frees soon
        affects=lambda m: True, invariant="start_is_required", also_under=("no_hangs",),
        guard="no request goes to the id of a cancelled backlogged START until its backlog place is dropped"),
)

KNOWN = KNOWN + (
    KnownDivergence(
        "cancelled-request-keeps-sequence",
        "Cancelling a request queued behind another of a running sequence releases the sequence's slot "
        "but keeps its id mapped to it (core before 06b8f6e, server issue 7117): the sequence goes on "
        "in the released slot without its cancelled requests, and when it idles out the reaper releases "
        "that slot a second time, so that one more sequence than there are slots is let in and two of "
        "them share a slot's state (seen live on 2.39 with a 4-slot direct model: five STARTs answered "
        "at once, and one sequence's next answer was another's sum). 2.44 (r24.03) too, pinned live; "
        "2.46 (r24.05) ends the sequence.",
        versions=("2.39.0", "2.41.0", "2.44.0"),
        symptom="the next request is answered with the sum without the cancelled requests, instead of the "
                "START-flag error",
        affects=lambda m: True, invariant="cancel_ends_sequence",
        guard="no request queued on a running sequence is cancelled (cancel_pipelined is left out)"),
    KnownDivergence(
        "swept-request-error-lost-on-stream",
        "A request of a sequence that another client's cancel ends, queued behind the cancelled one, "
        "fails CANCELLED with it; on a gRPC stream that error is lost: the client gets a response with "
        "no error and no outputs, only the triton_final_response parameter (unary gRPC gets CANCELLED "
        "with an empty message, HTTP a 400 with an empty one). On every build that cancels (probed live "
        "on 2.44 and 2.46 too; 2.36 runs a cancelled stream's requests). Found by cancel_pipelined's "
        "witness on a stream of its own, which the guard keeps on unary gRPC.",
        versions=("2.39.0", "2.41.0", "2.44.0", "2.46.0", "2.51.0"),
        symptom="an empty response (no OUTPUT, no error) on the stream",
        # an answer without OUTPUT breaks answers_well_formed (valid_is_accepted until stop 77)
        affects=lambda m: True, invariant="answers_well_formed", also_under=("valid_is_accepted",),
        signatures=("no OUTPUT in response",),  # not every malformed answer: this one
        guard="the request a cancel may sweep up (cancel_pipelined's witness) goes over unary gRPC, never a "
              "stream (and cancel_pipelined is left out for a decoupled model, which takes streams only)"),
)

KNOWN = KNOWN + (
    KnownDivergence(
        "cancel-not-honoured",
        "2.36 (r23.07) predates request cancellation: a START a client cancels while it waits in the "
        "backlog (its stream cancelled) still runs once a slot frees, so its sequence goes on: a "
        "request to its id without START is answered with the cancelled START's value in its sum, "
        "instead of the START-flag error, and the slot is held until it idles out. 2.39 and later drop "
        "it (probed live on all six builds). Found by probing the builds with the cancel steps.",
        versions=("2.36.0",), symptom="a request to a cancelled backlogged START's id is answered, its sum "
                                      "counting the cancelled START",
        # a request to that id waits behind the cancelled START until a slot frees: a hang, if none does soon
        affects=lambda m: True, invariant="start_is_required", also_under=("cancel_ends_sequence", "no_hangs"),
        guard="no START waiting in the backlog is cancelled (cancel is left out)"),
    KnownDivergence(
        "dtype-error-older-wording",
        "2.36 words the refusal of an INPUT of the wrong data type differently from 2.39 and later "
        "(\"inference input data-type is 'FP32', model expects 'INT32' for '<model>'\"), without naming the "
        "input. Not a broken promise but a different text: found by the release matrix, taken as built.",
        versions=("2.36.0",), symptom="the older wording of the same INVALID_ARGUMENT",
        affects=lambda m: True, invariant="invalid_is_refused",
        signatures=("inference input data-type is '",), as_built="older_dtype_wording"),
    KnownDivergence(
        "string-id-cut-at-nul",
        "A string sequence_id with an embedded NUL is cut at the NUL, over gRPC, gRPC streams and HTTP "
        "alike: 'a\\0x' is the sequence 'a' (a START on it restarts 'a', and 'a' goes on with its sum). "
        "The frontends hand the id to the core as a C string. Found by the fuzzer's string-id families "
        "(issue 26); 2.39 and 2.41 take no string ids on these models at all (string-ids-refused). 2.46 "
        "cuts them too (the release matrix).",
        versions=("2.46.0", "2.51.0"),
        symptom="the id before the NUL answers with the sum of the one with it (two sequences are one)",
        affects=lambda m: _corrid_type(m) in (None, "STRING"), invariant="sums_match",
        # 'a\0x' ended ends 'a' (a request on 'a\0y' is refused); a fresh 'a\0z' goes on with 'a'
        # without START (benchmarks.rediscovery, guard off: both, beside the wrong sums)
        also_under=("valid_is_accepted", "start_is_required"),
        guard="no string id with an embedded NUL is sent (this build cuts string ids at the NUL)", no_nul_ids=True),
)


def known_for(model, version: str | None) -> list[KnownDivergence]:
    return [d for d in KNOWN if d.applies(model, version)]


def steered_around(model, version: str | None, find=frozenset()) -> list[KnownDivergence]:
    """The known divergences of this model and build whose guards the fuzzer keeps: all but those
    it is to find unaided (`find`: their keys, FuzzSettings.find_known; pytest --known-divergences
    find names them all)."""
    return [d for d in known_for(model, version) if d.guard and d.key not in find]


KNOWN = KNOWN + (
    KnownDivergence(
        "ensemble-failure-counted-twice",
        "A request to an ensemble that fails in its step (refused by the step's sequence batcher: no "
        "START, or a cancel) adds two to the ensemble's fail count on 2.51, one on 2.36 to 2.46. Found by "
        "stats_agree's fail count (issue 28); a refusal sent straight to the step counts nowhere on "
        "every build.",
        versions=("2.51.0",), symptom="the ensemble's fail count rises by twice the requests that failed",
        affects=_ensemble, invariant="stats_agree", signatures=("fail count rose by",),
        guard="stats_agree lets the ensemble's fail count rise by two for each request that failed or was cancelled"),
    KnownDivergence(
        "iterative-release-counts-failure",
        "Each iterative START that its model rescheduled adds one to the model's fail count when it is "
        "finally released, though it was answered in full: 2.51 only (2.41 to 2.46 count none). Its "
        "duration is often nonsense: about three hours, or 2**64 ns less a little (the sum then wraps and "
        "seems to fall), for a START answered in 0.3 s, seen live. Found by stats_agree (issue 28).",
        versions=("2.51.0",), symptom="fail count one up per iterative START answered, with durations of hours",
        affects=lambda m: bool(getattr(m, "iterations", 0)), invariant="stats_agree",
        # its durations' sum wraps round 2**64 too, and seems to fall
        signatures=("fail count rose by", "fail duration rose by", "fail fell ("),
        guard="stats_agree lets the fail count rise by one, of any duration, for each request answered"),
)

KNOWN = KNOWN + (
    KnownDivergence(
        "unary-deadlines-crash",
        "Unary gRPC calls that their clients give up at deadlines of a millisecond or two, several in "
        "flight at once, crash tritonserver (SIGSEGV) within a few thousand calls: server issue 7368 "
        "(reported on 24.08, fixed in r24.12). On 2.46, as often, unary gRPC inference stops being served "
        "instead: every later unary call (a refusal too, on a fresh channel) goes unanswered, while HTTP, "
        "streams and metadata go on (the symptom of server PR 7325). Calls cancelled as soon as sent do "
        "it too (2.41, 2.51: dead within 1600; 2.39: no answer on any transport after 4800). Found by "
        "the deadlines fault (--nemesis deadlines); 2.36 survived 16000 calls given up at deadlines.",
        versions=("2.39.0", "2.41.0", "2.44.0", "2.46.0", "2.51.0"),
        symptom="the server dies (SIGSEGV); on 2.46 unary gRPC may go unanswered instead",
        # a decoupled model takes no unary call (the fault cancels its streams instead)
        affects=lambda m: not getattr(m, "decoupled", False), invariant="server_alive", also_under=("no_hangs",),
        # the deadlines fault's step, or any later death on a server process it gave calls up on
        signatures=("given up",),
        needs_fault="deadlines"),
)

KNOWN = KNOWN + (
    KnownDivergence(
        "iterative-backlog-start-stalls",
        "An iterative START that waited in the backlog (more iterative STARTs than slots) runs once and "
        "is never rescheduled: its first answer comes, the rest and its final never do, and its client "
        "waits for good. The core gave a request its reschedule callback only when it went straight to "
        "a slot (core #337, r24.04). Found by the fuzzer's iterative bursts past the free slots, pinned "
        "live (tests/test_iterative.py); 2.46 and 2.51 reschedule it.",
        versions=("2.41.0", "2.44.0"),
        symptom="one answer, then nothing: no further iteration and no final response",
        affects=lambda m: bool(getattr(m, "iterations", 0)), invariant="no_hangs",
        guard="an iterative burst starts no more sequences than there are free slots"),
)

KNOWN = KNOWN + (
    KnownDivergence(
        "iterative-start-after-start-end-stalls",
        "On an iterative model, a START (without END) on the id of a START+END that reaches the server "
        "before the core has released that one runs once and is never rescheduled: its first answer "
        "comes, its other iterations and its final answer never do, and its client waits for good. "
        "Releasing the START+END, the core enqueues a cancelled END on its id; coming after the new "
        "START, it ends that sequence, whose reschedule is then refused for want of START (in the log "
        "only). Pipelined behind the START+END on one stream it stalls on every build; sent once the "
        "START+END was answered, it stalls on 2.46 and 2.51 only (sent 50 ms later, nowhere). On 2.44 "
        "such a START was once answered with a response without OUTPUT instead. Found by a regression "
        "seed's campaign; pinned live (tests/test_iterative.py).",
        versions=("2.41.0", "2.44.0", "2.46.0", "2.51.0"),
        symptom="one answer, then nothing: no further iteration and no final response (once: an empty response)",
        affects=lambda m: bool(getattr(m, "iterations", 0)), invariant="no_hangs",
        also_under=("valid_is_accepted", "answers_well_formed"),
        signatures=("no response within", "no final response within", "no OUTPUT in response"),
        guard="no request goes to the id of an iterative START+END again"),
)

KNOWN = KNOWN + (
    KnownDivergence(
        "iterative-cancel-crash",
        "Decoupled iterative STARTs (without END) whose gRPC stream is cancelled while they iterate "
        "(between one execution's release for rescheduling and the next) kill tritonserver with "
        "SIGSEGV: within 20 to 110 such streams of 1-3 STARTs on 2.41, 2.44, 2.46 and 2.51 (an idle "
        "machine). START+ENDs, which are not rescheduled, and a decoupled model that is not iterative "
        "lived through 600 such streams each. Found by hand, chasing a 30-minute campaign's "
        "unreplayable no_hangs on the decoupled iterative model (a START of a burst unanswered while "
        "the others were answered in milliseconds); whether that hang is this fault is not shown. "
        "The deadlines fault (--nemesis deadlines) meets it: on a decoupled model it cancels streams "
        "in flight (40 examples killed 2.51 in 5 of 6 campaigns). Pinned live (tests/test_iterative.py).",
        versions=("2.41.0", "2.44.0", "2.46.0", "2.51.0"),
        symptom="the server dies (SIGSEGV); every stream ends UNAVAILABLE: Stream removed",
        affects=_decoupled_iterative,
        invariant="server_alive", also_under=("no_hangs",),
        # the deadlines fault's step, or any later death on a server process it cancelled streams on
        signatures=("streamed calls cancelled",),
        needs_fault="deadlines"),
)

KNOWN = KNOWN + (
    KnownDivergence(
        FINAL_ALONE_CRASH,
        "A decoupled model that sends its answer and then its final flag in a response of its own (the "
        "common send(response); send(flags=FINAL)), whose gRPC streams are cancelled in flight, each a "
        "whole sequence (START+END), kills tritonserver with SIGSEGV (2.51: in the gRPC frontend's "
        "ModelStreamInferHandler::Process). The give_up fault's strikes alone, four streams in flight, "
        "killed 2.51 after 53, 85 and 417 cancelled streams, 2.39, 2.41, 2.44 and 2.46 after 63, 78, 69 "
        "and 272; 2.36 lived through 20242 in a minute. The same model sending its final flag with the "
        "answer lived through 6858 on 2.51 and 12842 on 2.46 (on 2.39-2.44 it dies too: "
        "decoupled-cancel-crash); one that is not decoupled lived through 10296 on 2.51. The class of "
        "server PR 8078 (a cancellation processed after the call's state was released; fixed after every "
        "build here). Found by give_up_beside, steered to cancel while the calls run, on the model of "
        "tests/test_final_alone.py: a 4-example campaign killed 2.51 in 6 of 39 runs.",
        versions=("2.39.0", "2.41.0", "2.44.0", "2.46.0", "2.51.0"),
        symptom="the server dies (SIGSEGV) right after streams it "
                "answered with a final flag of its own were cancelled",
        affects=_decoupled_not_iterative, invariant="server_alive", also_under=("no_hangs",),
        # a death after cancelled streams of a model seen to send its final flag alone (Engine._after_given_up)
        signatures=(FINAL_ALONE,), race=True, met_despite_guard="deadlines",
        guard="give_up_beside cancels no stream of a decoupled model that sends its final flag in a "
              "response of its own, nor of one that has answered nothing yet"),
)

KNOWN = KNOWN + (
    KnownDivergence(
        DECOUPLED_CANCEL_CRASH,
        "On 2.39 to 2.44 the same crash takes a decoupled model that sends its final flag with its "
        "answer too (final-alone-cancel-crash takes one that sends it alone, on 2.39 to 2.51): the give_up "
        "fault's strikes alone, four streams in flight, each a whole sequence, killed 2.39 after 17, 54 "
        "and 69 cancelled streams, 2.41 and 2.44 after 11135 and 8398 (a minute each); 2.36, 2.46 and "
        "2.51 lived through 12894, 12842 and 6858. Found while measuring final-alone-cancel-crash.",
        versions=("2.39.0", "2.41.0", "2.44.0"),
        symptom="the server dies (SIGSEGV) right after streams were cancelled in flight",
        affects=_decoupled_not_iterative, invariant="server_alive", also_under=("no_hangs",),
        # a death on a server process the deadlines or give_up fault cancelled streams on
        signatures=("streamed calls cancelled",), race=True, met_despite_guard="deadlines",
        guard="give_up_beside cancels no stream of a decoupled model"),
)

KNOWN = KNOWN + (
    KnownDivergence(
        "iterative-beside-backlog-crash",
        "A decoupled iterative model's STARTs, iterating while another model of the same server lets a "
        "START in from its backlog (a START that waited for a slot), kill tritonserver (SIGSEGV in "
        "TRITONBACKEND_ResponseSend, from the Python backend's decoupled path into the gRPC frontend) "
        "within seconds on 2.46 and 2.51; 2.41 and 2.44 lived through 30 s of it (one try each). "
        "Neither alone does it: bursts of iterative STARTs lived beside unary, streamed, HTTP and "
        "cancelled-stream traffic to the other model, and the other model's backlog lived alone. "
        "Found by a 2-core campaign of every default model, two at a time on one server: the iterative "
        "model's campaign killed the server 5 s in, beside the native implicit model's; an iterative "
        "START's answers cut short come first (sums_match). Pinned live (tests/test_iterative.py, by "
        "hand: CI's loaded run did not meet the race in 120 s). "
        "The 30-minute runs gave the decoupled models a server of their own, and lived; so does "
        "`pytest fuzz/ -n N`, whose workers otherwise fuzz two models at a time on one server (alone). "
        "Not the iterative model's alone: a 2-core `dev` run of every default model (stop 92) died the same "
        "way (SIGSEGV in TRITONBACKEND_ResponseSend, from the Python backend's execute) while the split "
        "ensemble (a native decoupled front step, a Python accumulator behind it) was fuzzed beside the "
        "native implicit model, whose STARTs behind their ENDs went to the backlog: it gets a server of "
        "its own too.",
        versions=("2.46.0", "2.51.0"),
        symptom="the server dies (SIGSEGV) while another model's backlogged START is let in",
        affects=_dies_beside_a_backlog,
        invariant="server_alive", also_under=("no_hangs",), alone=True),
    KnownDivergence(
        "ensemble-step-flags-kept",
        "An ensemble step's responses cannot take sequence flags away: the scheduler starts each chunk's "
        "flags from the ensemble request's and only adds the sequence_start / sequence_end response "
        "parameters that are true (core #369, since the cleanup e978d80 of r23.12, fixed in r24.07). A "
        "decoupled step that cuts a START request into chunks restarts the next step's sequence at every "
        "chunk; one that cuts an END request ends it at the first chunk, and that request mostly gets no "
        "answer at all: the ensemble request stays in flight until the server stops (as does a later "
        "request on its id); now and then its first chunk is answered and the second refused for want "
        "of START. The Python backend of these builds cannot set response parameters: modelgen's split "
        "ensembles cut each request with a native step (modelgen/native/split.c: its value, then 0), and "
        "tests/test_ensemble_flags.py pins it on every build.",
        versions=("2.41.0", "2.44.0", "2.46.0"),
        symptom="a START's second chunk answers 0 (started again); a request with END is mostly never answered",
        affects=lambda m: getattr(m, "chunks", 0) > 1, invariant="sums_match", also_under=("no_hangs",)),
    KnownDivergence(
        "ensemble-step-refusal-unanswered",
        "A request the stateful step behind a decoupled ensemble step refuses when it is enqueued (one "
        "without START on an id with no live sequence: never started, ended, or idled out; or one with "
        "correlation id 0) is never answered: no error and no final response reach the client, and the ensemble request stays "
        "in flight until the server stops, where a one-step ensemble answers the refusal. The same class "
        "as core #466 (an ensemble request stuck for good when a step's enqueue fails for its "
        "max_queue_size; fixed in 2026, after every build here). Found by the first campaign on modelgen's "
        "split ensemble (send_without_start), on 2.51, then seen by hand on 2.36, 2.39 and 2.46.",
        versions=("2.36.0", "2.39.0", "2.41.0", "2.44.0", "2.46.0", "2.51.0"),
        symptom="no answer at all to a request that should be refused for want of START",
        affects=lambda m: getattr(m, "chunks", 0) > 1, invariant="no_hangs",
        # no answer where the step's refusal was due (each of its enqueue refusals says "must specify"),
        # whichever promise the check names (no_hangs, invalid_is_refused)
        signatures=("no response within", "no final response within"), expected_signatures=("must specify",),
        guard="no request that the step would refuse as it is enqueued (no START, a zero id) is sent to a split ensemble"),
    KnownDivergence(
        "start-behind-end-runs-first",
        "Under the oldest strategy, a START pipelined on one stream right behind an END on its id may "
        "run before that END: the END forgets the id as it is enqueued, the START takes another "
        "candidate slot, and its row can run ahead of the END's. A model that keeps its state by "
        "CORRID then ends the new sequence with the old one's END (plain tritonclient streams on 2.51: "
        "START 74, END 0, START -55 answered 74, -55, -55 in 63 of 100 on an oldest model, 0 of 100 "
        "on a direct one). On an ensemble whose decoupled front step cuts each request into chunks "
        "(modelgen's split ensemble, oldest behind it), a START+END is a START chunk and an END "
        "chunk, so a START right behind a START+END is answered inside it: 180 of 200 pairs. Found "
        "on 2.51 by a `dev` campaign on the split ensemble once the swarm kept `run` on; not tried on "
        "other builds.",
        versions=("2.51.0",),
        symptom="a START+END (or an END) answered with the sum of the START pipelined behind it on its id",
        # the fuzzer pipelines a START behind an END only behind a START+END, harmless where that is
        # one request (both START): it meets it on split ensembles only
        affects=lambda m: getattr(m, "chunks", 0) > 1, invariant="sums_match",
        guard="no START is pipelined right behind a START+END on its id to a split ensemble"),
    KnownDivergence(
        OVERTAKES,
        "A START pipelined on one stream right behind a sequence's END on its id (a client that keeps one "
        "correlation id for sequence after sequence) may run before that END: the END forgets the id as "
        "it is enqueued, and the START takes another slot. Under the oldest strategy its execution can "
        "come first; under direct both can run in one execution, the START's row first where it took a "
        "lower slot; and on a loaded server the START can share an execution with the request sent before "
        "that END, its row first. Each sequence keeps its own slot and order, so a model that keeps its state by slot "
        "(or Triton's implicit state) never shows it, but one that keeps it by CORRID adds the overtaken "
        "requests (the END, and any before it) to the new sequence's sum and ends that one instead. Whether the server must keep one id's sequences "
        "in order is arguable (each keeps its own); the fuzzer reports it as this divergence where the "
        "first wrong answer, the END's or one pipelined before it and still in flight, is the new START's sum "
        "plus that request's value, and from then on pipelines no START "
        "behind an END on its id in that campaign. Any other wrong sum is a finding (a reset "
        "hoisted before the execution's rows answers the END's value alone). Seen on 2.51 on modelgen's "
        "CORRID models (the same reordering as start-behind-end-runs-first, met behind a sequence of "
        "several requests); not tried on other builds.",
        versions=("2.51.0",),
        symptom="an END, or a request pipelined before it, answered the sum of the START pipelined right behind "
                "that END on its id plus its own value",
        affects=_may_key_by_corrid, invariant="sums_match", details=(START_RAN_FIRST,), race=True,
        as_built="no_start_behind_its_end"),
)

# What the reference model can take as built, each with what it then expects.
AS_BUILT = {
    "carries_no_state": "every answer is the initial sum plus the request's own value (BatcherModel.carries_state)",
    "older_dtype_wording": "a wrong-dtype request is refused in 2.36's words (model.OLDER_DTYPE_ERROR)",
    "no_start_behind_its_end": "no START is pipelined right behind an END on its id any more (the generator steers "
                               "around it: what the END answers then depends on how the model keys its state)",
}


def accepted(keys, behaviour: str) -> bool:
    """Whether one of the accepted divergences `keys` is the built behaviour `behaviour`."""
    return any(d.as_built == behaviour for d in KNOWN if d.key in keys)


def by_key(key: str) -> KnownDivergence:
    return next(d for d in KNOWN if d.key == key)


def as_built_of(key: str) -> str:
    """What the reference expects once it takes the divergence `key` as built."""
    return AS_BUILT[by_key(key).as_built]


def build_table(versions=None) -> str:
    """Markdown: one row per known divergence, a column per build (default: the release matrix's),
    "x" where it was seen (README shows it, and a test keeps the two alike)."""
    if versions is None:
        from ..harness.releases import MATRIX_RELEASES, TRITON_VERSION

        versions = tuple(TRITON_VERSION[r] for r in MATRIX_RELEASES)
    head = "| divergence | " + " | ".join(v.rsplit(".", 1)[0] for v in versions) + " |"
    rule = "|---|" + "---|" * len(versions)
    rows = [f"| {d.key} | " + " | ".join("x" if v in d.versions else "" for v in versions) + " |" for d in KNOWN]
    return "\n".join([head, rule, *rows])
