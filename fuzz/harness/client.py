"""The client: turns a Request value into one inference call and its Outcome. Nothing else here
knows tritonclient. Three transports, because the batcher must treat them alike: unary gRPC,
a gRPC bidirectional stream (one per fuzz client, responses in order), and HTTP.
"""
from __future__ import annotations

import math
import queue
import threading
import time

import attrs
import numpy as np

from modelgen.variants import EXECUTION_OUTPUT, LIVE_ROWS_OUTPUT, ROW_OUTPUT

from ..spec import NUMPY_DTYPES
from ..values import Outcome, Request, SeqId  # noqa: F401 - re-exported: the client's values

# Every numeric datatype a request is sent in (the model's, or another a rule sends on purpose)
# and an answer can come back as: one not the model's is read all the same, and
# answers_well_formed says so (as HTTP's client reads it), not a refusal.
NP_DTYPE = {**NUMPY_DTYPES, "BOOL": np.bool_}


def input_array(req: Request) -> np.ndarray:
    """INPUT as the wire carries it: the request's value in its dtype. A float model is sent values
    past its range on purpose (machine._fit's Wide values; the reference rounds them alike), which
    the cast takes to infinity, as meant: no RuntimeWarning for it."""
    with np.errstate(over="ignore"):
        return np.full(req.shape, req.value, dtype=NP_DTYPE.get(req.dtype, np.int64))


def encode(req: Request, request_id: str = "") -> "service_pb2.ModelInferRequest":
    """The gRPC request, built by hand: tritonclient leaves out the sequence parameters for id 0
    (which the batcher must refuse, so the fuzzer sends it) and sends uint64 ids >= 2**63 as a
    Python int that does not fit int64_param."""
    from tritonclient.grpc import service_pb2

    msg = service_pb2.ModelInferRequest(model_name=req.model, id=request_id)
    arr = input_array(req)
    msg.inputs.add(name="INPUT", datatype=req.dtype, shape=list(arr.shape))
    msg.raw_input_contents.append(arr.tobytes())
    params = msg.parameters
    if isinstance(req.seq_id, str):
        params["sequence_id"].string_param = req.seq_id
    elif req.seq_id >= 2**63:
        # Triton 2.51 refuses uint64_param here and reads int64_param as uint64, so the
        # two's complement is how a gRPC client names ids at or above 2**63.
        params["sequence_id"].int64_param = req.seq_id - 2**64
    else:
        params["sequence_id"].int64_param = req.seq_id
    params["sequence_start"].bool_param = req.start
    params["sequence_end"].bool_param = req.end
    if req.timeout_us is not None:
        params["timeout"].int64_param = req.timeout_us
    return msg


def _streamed(msg):
    """A request as a stream sends it: asking for the final flag a decoupled model may send on its own
    after its answers (as most streaming clients do). Without it such a flag reaches no client, and
    a request the model answered, then closed, waits for good."""
    msg.parameters["triton_enable_empty_final_response"].bool_param = True
    return msg


def _took(started: float) -> dict:
    """An Outcome's timing: when its request was sent (taken just before the send, so that a
    history's interval for it holds the true one: fuzz/checker/history.py) and how long the answer took."""
    return {"latency_s": time.monotonic() - started, "sent_at": started}


def decode(response, started: float) -> Outcome:
    """OUTPUT[0] of a ModelInferResponse."""
    found = _output(response, "OUTPUT")
    if found is None:
        return Outcome(status="BAD_RESPONSE", message=f"no OUTPUT in response (got {[o.name for o in response.outputs]})",
                       **_took(started))
    datatype, arr, out = found
    if arr is None:
        return Outcome(status="BAD_RESPONSE", message=f"OUTPUT came back as {datatype} without data",
                       **_took(started))
    if arr.size == 0:
        return Outcome(status="BAD_RESPONSE", message="OUTPUT came back empty", **_took(started))
    return Outcome(value=arr[0].item(), **_took(started), live_rows=_said(response, LIVE_ROWS_OUTPUT),
                   row=_said(response, ROW_OUTPUT), execution=_said(response, EXECUTION_OUTPUT), shape=out.shape,
                   datatype=datatype)


def _output(response, name: str):
    """(datatype, elements, the output itself) of a ModelInferResponse's output `name`, elements None
    where its type is none the fuzzer reads or its data is missing; None where the response has no
    such output. Its shape is read only where it is judged (OUTPUT's): a stream's reader thread
    races the clients' cancels, and its cost per answer moves races the pins need (a tuple of
    every output's shape, a few microseconds an answer, kept iterative-cancel-crash from 2.51 for
    8,000 streams where it died after 600)."""
    for i, out in enumerate(response.outputs):
        if out.name == name:
            dtype = NP_DTYPE.get(out.datatype)
            if dtype is None or i >= len(response.raw_output_contents):
                return out.datatype, None, out
            return out.datatype, np.frombuffer(response.raw_output_contents[i], dtype=dtype), out
    return None


def _strayed(form: tuple, sent: tuple | None) -> bool:
    """An answer's OUTPUT (shape, datatype) is not its INPUT's `sent` (what was not read is not judged)."""
    return sent is not None and any(got is not None and got != want for got, want in zip(form, sent))


def _said(response, name: str) -> int | None:
    """What a generated model says of the execution that answered, if it says: its live rows
    (LIVE_ROWS_OUTPUT), the request's row in it (ROW_OUTPUT)."""
    found = _output(response, name)
    return None if found is None or found[0] != "INT32" else _first(found[1])


def _first(elements) -> int | None:
    """The first of a diagnostic output's elements, None where there are none."""
    return int(elements.reshape(-1)[0]) if elements is not None and elements.size else None


def _final(response) -> bool:
    """A streamed response is its request's last: Triton marks a decoupled model's responses with
    `triton_final_response`; any other model's one response is final."""
    flag = response.parameters.get("triton_final_response")
    return flag is None or flag.bool_param


def _failed(err, started: float) -> Outcome:
    """A unary call's RpcError as an Outcome: its status (a missed deadline is the client's
    timeout) and message."""
    import grpc

    status = "CLIENT_TIMEOUT" if err.code() == grpc.StatusCode.DEADLINE_EXCEEDED else err.code().name
    return Outcome(status=status, message=err.details() or "", **_took(started))


def _channel(url: str):
    import grpc

    return grpc.insecure_channel(url.removeprefix("grpc://"))


def open_channel(url: str):
    """A gRPC connection several streams may share (StreamClient's `channel`); close() it."""
    return _channel(url)


class GrpcClient:
    """Unary gRPC: one blocking call per request."""

    def __init__(self, url: str):
        from tritonclient.grpc import service_pb2_grpc

        self._channel = _channel(url)
        self._stub = service_pb2_grpc.GRPCInferenceServiceStub(self._channel)

    def infer(self, req: Request, timeout_s: float = 30.0) -> Outcome:
        import grpc

        started = time.monotonic()
        try:
            response = self._stub.ModelInfer(encode(req), timeout=timeout_s)
        except grpc.RpcError as err:
            return _failed(err, started)
        return decode(response, started)

    def send(self, req: Request, timeout_s: float = 30.0) -> "UnaryCall":
        """Starts the call and returns at once; its get() waits for the Outcome."""
        started = time.monotonic()  # before the call starts: a history's interval must hold the send
        return UnaryCall(self._stub.ModelInfer.future(encode(req), timeout=timeout_s), started)

    def close(self):
        self._channel.close()


class Box:
    """Where a stream request's Outcome lands: put once by the stream's reader, taken once.
    queue.Queue(maxsize=1)'s get/get_nowait (queue.Empty when nothing came) at a fraction of its
    cost: a queue builds three conditions, which every request sent on a stream paid."""

    __slots__ = ("_ready", "_item", "started", "answered")

    def __init__(self):
        self._ready = threading.Lock()
        self._ready.acquire()  # released by put
        self._item = None
        self.started = time.monotonic()  # made just before its request is sent
        self.answered: list = []  # answers before its final one, as they came (told if the final never does)

    def put(self, item: Outcome) -> None:
        self._item = item
        self._ready.release()

    def get(self, block: bool = True, timeout: float | None = None) -> Outcome:
        taken = self._ready.acquire(True, -1 if timeout is None else timeout) if block else self._ready.acquire(False)
        if not taken:
            raise queue.Empty
        return self._item

    def get_nowait(self) -> Outcome:
        return self.get(False)

    def empty(self) -> bool:
        """Nothing has come yet (or what came was taken)."""
        return self._ready.locked()


class UnaryCall:
    """A unary gRPC call in flight, read like a StreamClient box: get(timeout) gives its Outcome
    or raises queue.Empty."""

    answered = ()  # (a Box's answers before its final one: a unary call has none)

    def __init__(self, future, started: float):
        self._future, self._started = future, started
        self.done_at: float | None = None  # when its answer came (gRPC's thread), however late it is read
        future.add_done_callback(self._done)

    def _done(self, _future) -> None:
        self.done_at = time.monotonic()

    @property
    def started(self) -> float:
        return self._started

    def get(self, timeout: float | None = None) -> Outcome:
        import grpc

        try:
            response = self._future.result(timeout=timeout)
        except grpc.FutureTimeoutError:
            raise queue.Empty from None
        except grpc.FutureCancelledError:
            return Outcome(status="CANCELLED", message="cancelled by the client", **_took(self._started))
        except grpc.RpcError as err:
            return _failed(err, self._started)
        return decode(response, self._started)

    def cancel(self) -> None:
        """The client gives the call up (its get() then says CANCELLED, unless it was answered)."""
        self._future.cancel()

    def get_nowait(self) -> Outcome:
        return self.get(0)


class HttpClient:
    """HTTP/REST through tritonclient.http: one blocking call per request."""

    def __init__(self, url: str, timeout_s: float = 60.0):
        import tritonclient.http as httpclient

        self._mod = httpclient
        self._url = url.removeprefix("http://")
        # tritonclient.http sets its network timeout per client: one client per whole second of
        # timeout asked for (the engine's hang bound widens on a starved machine, fuzz/harness/lag.py).
        self._clients: dict[int, object] = {}
        self._client = self._for(timeout_s)

    def _for(self, timeout_s: float):
        whole = max(1, math.ceil(timeout_s))
        if whole not in self._clients:
            self._clients[whole] = self._mod.InferenceServerClient(self._url, network_timeout=whole)
        return self._clients[whole]

    def infer(self, req: Request, timeout_s: float | None = None) -> Outcome:
        client = self._client if timeout_s is None else self._for(timeout_s)
        started = time.monotonic()
        arr = input_array(req)
        tensor = self._mod.InferInput("INPUT", list(arr.shape), req.dtype)
        tensor.set_data_from_numpy(arr)
        try:
            result = client.infer(req.model, [tensor], sequence_id=req.seq_id, sequence_start=req.start,
                                        sequence_end=req.end, timeout=req.timeout_us)
        except self._mod.InferenceServerException as err:
            # HTTP errors carry the HTTP status; map the two the batcher uses to gRPC's names.
            status = {"400": "INVALID_ARGUMENT", "503": "UNAVAILABLE"}.get(str(err.status()), str(err.status()))
            return Outcome(status=status, message=err.message(), **_took(started))
        except TimeoutError as err:  # the client's network timeout (gevent's socket timeout)
            return Outcome(status="CLIENT_TIMEOUT", message=f"no response: {err}", **_took(started))
        except ConnectionError as err:  # refused or reset: what gRPC calls UNAVAILABLE (a dead server's)
            return Outcome(status="UNAVAILABLE", message=f"no connection: {err}", **_took(started))
        out = result.as_numpy("OUTPUT")
        if out is None or out.size == 0:
            return Outcome(status="BAD_RESPONSE", message="no OUTPUT in response", **_took(started))
        return Outcome(value=out.reshape(-1)[0].item(), **_took(started), shape=out.shape,
                       datatype=result.get_output("OUTPUT")["datatype"],
                       live_rows=_first(result.as_numpy(LIVE_ROWS_OUTPUT)), row=_first(result.as_numpy(ROW_OUTPUT)),
                       execution=_first(result.as_numpy(EXECUTION_OUTPUT)))

    def close(self):
        for client in self._clients.values():
            client.close()


def _after_end(ended: tuple, started: float) -> Outcome:
    """The Outcome of a request that found its stream's call ended ((call, status, message))."""
    return Outcome(status=ended[1], message=f"the stream had already ended: {ended[2]}", **_took(started))


class StreamClient:
    """One gRPC bidirectional stream (ModelStreamInfer). send() returns at once with a box that
    will hold the Outcome; each request carries a ticket as its id and each response (error
    responses included) echoes it, so replies are matched exactly, whatever their order.
    """

    def __init__(self, url: str, channel=None):
        """`channel`: a connection (open_channel) shared with other streams, which its owner
        closes; else the stream has a connection of its own."""
        from tritonclient.grpc import service_pb2_grpc

        self._owns_channel = channel is None
        self._channel = _channel(url) if channel is None else channel
        self._stub = service_pb2_grpc.GRPCInferenceServiceStub(self._channel)
        self._lock = threading.Lock()
        self._pending: dict[str, Box] = {}  # each its clock in Box.started
        self._partials: dict[str, list] = {}  # answers before the final one, by request id
        self._last: dict[str, Outcome] = {}  # the latest of them, whole: a final flag sent alone closes on it
        self._forms: dict[str, list] = {}  # and their OUTPUT (shape, datatype), each once
        self._sent_forms: dict[str, tuple] = {}  # the (shape, datatype) each request's INPUT went with
        self._calls: dict[str, object] = {}  # the stream call each request went out on
        self._next = 0
        self._outbox: queue.Queue | None = None
        self._call = None
        self._reader: threading.Thread | None = None
        self._ended: tuple | None = None  # (call, status, message) once a stream RPC has ended

    def _requests(self, outbox):
        while True:
            msg = outbox.get()
            if msg is None:
                return
            yield msg

    def _read(self, call):
        import grpc

        try:
            for response in call:
                rid = response.infer_response.id
                if not response.error_message and not _final(response.infer_response):
                    self._partial(rid, response.infer_response)
                    continue
                with self._lock:
                    box = self._pending.pop(rid, None)
                    partials = self._partials.pop(rid, ())
                    last = self._last.pop(rid, None)
                    forms = self._forms.pop(rid, [])
                    sent = self._sent_forms.pop(rid, None)
                    self._calls.pop(rid, None)
                if box is None:
                    continue
                started = box.started
                if response.error_message:
                    box.put(Outcome(status="ERROR", message=response.error_message,
                                    **_took(started), partials=partials))
                else:
                    if last is not None and not response.infer_response.outputs:
                        # A decoupled model's final flag sent on its own, after its answers (the
                        # common send(response); send(flags=FINAL)): its last answer is the final one.
                        got, partials = attrs.evolve(last, **_took(started), final_alone=True), partials[:-1]  # answered now
                    else:
                        got = decode(response.infer_response, started)
                    # of all its answers, the first shaped or typed otherwise than its INPUT is the one to tell
                    shape, datatype = next((f for f in [(got.shape, got.datatype), *forms] if _strayed(f, sent)),
                                           (got.shape, got.datatype))
                    box.put(attrs.evolve(got, partials=partials, shape=shape, datatype=datatype))
        except grpc.RpcError as err:
            self._fail_pending(err.code().name, err.details() or "stream ended", ended=call)
        else:
            self._fail_pending("STREAM_CLOSED", "the server closed the stream before responding", ended=call)

    def _partial(self, rid: str, response) -> None:
        """An answer before a request's final one: kept, in order, for its Outcome."""
        with self._lock:
            if rid in self._pending:
                got = decode(response, self._pending[rid].started)
                self._partials.setdefault(rid, []).append(got.value if got.ok else got.describe())
                self._last[rid] = got
                self._pending[rid].answered.append(got.describe())
                if got.ok and (got.shape, got.datatype) not in self._forms.setdefault(rid, []):
                    self._forms[rid].append((got.shape, got.datatype))

    def _fail_pending(self, status: str, message: str, ended=None) -> None:
        """Fails the requests still unanswered: those sent on the call that `ended`, or every one.
        A reader that outlived close()'s join ends later, when a new call may carry requests of
        its own: those are not its to fail."""
        with self._lock:
            gone = [rid for rid in self._pending if ended is None or self._calls.get(rid) is ended]
            orphans = self._forget(gone)
            if ended is not None and ended is self._call:
                # A request sent on this call from now on would wait for a reader that is gone.
                self._ended = (ended, status, message)
        for box in orphans:
            box.put(Outcome(status=status, message=message, **_took(box.started)))

    def _forget(self, rids) -> list:
        """The box of each of `rids`, dropped from every table (under the lock)."""
        orphans = [self._pending.pop(rid) for rid in rids if rid in self._pending]
        for rid in rids:
            for answers in (self._partials, self._last, self._forms, self._sent_forms, self._calls):
                answers.pop(rid, None)
        return orphans

    def _ended_call(self) -> tuple | None:
        """(call, status, message) where the current call has ended, else None (under the lock)."""
        return self._ended if self._ended is not None and self._ended[0] is self._call else None

    def _ensure_open(self):
        if self._call is None:
            self._outbox = queue.Queue()
            self._call = self._stub.ModelStreamInfer(self._requests(self._outbox))
            self._reader = threading.Thread(target=self._read, args=(self._call,), daemon=True,
                                            name="triton-stream-reader")
            self._reader.start()

    def cancel(self) -> None:
        """Cancels the stream's call now, not waiting for its reader: close() ends it after."""
        if self._call is not None:
            self._call.cancel()

    def open(self) -> None:
        """Starts the stream's call now, not at the first push: a new call's first request
        otherwise waits about a millisecond for it (as long as a fast model's answer)."""
        self._ensure_open()

    def send(self, req: Request) -> Box:
        messages, boxes = self.prepare([req])
        self.push(messages)
        return boxes[0]

    def prepare(self, reqs) -> tuple[list, list]:
        """The requests encoded and their boxes, not sent yet: push() hands them to the stream
        together, so that requests of several streams reach the server as close together as the
        connections allow (encoding is most of a send's time)."""
        messages, boxes = [], []
        for req in reqs:
            box = Box()
            boxes.append(box)
            with self._lock:
                ended = self._ended_call()
                if ended is not None:
                    box.put(_after_end(ended, box.started))
                    continue
                rid = f"r{self._next}"
                self._next += 1
                self._pending[rid] = box
                self._sent_forms[rid] = (req.shape, req.dtype)
            messages.append(_streamed(encode(req, rid)))
        return messages, boxes

    def push(self, messages) -> None:
        self._ensure_open()
        with self._lock:
            ended = self._ended_call()
            if ended is None:
                now = time.monotonic()  # sent now: prepared requests may have waited for others' encoding
                for msg in messages:
                    self._calls[msg.id] = self._call
                    if msg.id in self._pending:
                        self._pending[msg.id].started = now
            else:  # the call ended after they were prepared: its reader failed what it carried, these too
                orphans = self._forget([msg.id for msg in messages])
        if ended is not None:
            for box in orphans:
                box.put(_after_end(ended, box.started))
            return
        for msg in messages:
            self._outbox.put(msg)

    def infer(self, req: Request, timeout_s: float = 30.0) -> Outcome:
        return self.wait(self.send(req), timeout_s)

    @staticmethod
    def wait(box: Box, timeout_s: float) -> Outcome:
        """The outcome in a box from send(), or CLIENT_TIMEOUT after `timeout_s`."""
        try:
            return box.get(timeout=timeout_s)
        except queue.Empty:
            if box.answered:  # answered, but never flagged final: the request never completed
                return Outcome(status="CLIENT_TIMEOUT", message=f"no final response within {timeout_s} s (it answered "
                               f"{', '.join(box.answered)}, none flagged final)", **_took(box.started))
            return Outcome(status="CLIENT_TIMEOUT", message=f"no response within {timeout_s} s", **_took(box.started))

    @staticmethod
    def poll(box: Box, timeout_s: float) -> Outcome | None:
        """The outcome in a box from send(), waiting at most `timeout_s` (0: just look); None if
        nothing came."""
        try:
            return box.get(timeout=timeout_s) if timeout_s > 0 else box.get_nowait()
        except queue.Empty:
            return None

    def close(self, cancel_requests: bool = False, timeout_s: float = 30.0) -> None:
        """Ends the stream. Without cancel_requests, the half-close lets in-flight requests finish
        and their responses arrive; with it, the RPC is cancelled and they end CANCELLED."""
        call, self._call = self._call, None
        if call is None:
            return
        if cancel_requests:
            call.cancel()
        # Always: gRPC's thread that reads the request iterator waits in it for the next message
        # and would wait forever after a cancel (a thread per cancelled stream, 1 GB an hour).
        self._outbox.put(None)
        self._reader.join(timeout_s)
        self._fail_pending("CANCELLED" if cancel_requests else "CLIENT_TIMEOUT",
                           "stream closed before the response came")

    def warm(self, timeout_s: float) -> None:
        """Connects now, not at the first send (which then goes out at once)."""
        import grpc

        grpc.channel_ready_future(self._channel).result(timeout=timeout_s)

    def close_channel(self) -> None:
        """Drops the connection too (a stream whose connection was cut is not reused), where it
        is the stream's own."""
        try:
            self.close(cancel_requests=True, timeout_s=5.0)
        finally:
            if self._owns_channel:
                self._channel.close()

    @property
    def in_flight(self) -> int:
        with self._lock:
            return len(self._pending)

    def __del__(self):
        if not getattr(self, "_owns_channel", True):
            return  # a shared connection is its owner's to close (closing it here, inside gRPC, deadlocked)
        try:
            self._channel.close()
        except Exception:
            pass
