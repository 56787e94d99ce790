#!/usr/bin/env python3
"""The runtime every standalone reproducer of a triton-seqfuzz corpus shares (fuzz/corpus/reproducer.py
copies it into the corpus folder as seqfuzz_replay.py; each NAME.py beside it holds one entry's
program and calls main()).

Replays the recorded program of sequence-batcher requests against a Triton and prints, per step,
what was expected and what came back; exits 1 when a step diverges, 0 when none does, 2 when
the server cannot be reached. Needs only tritonclient[grpc,http] and numpy:

    pip install 'tritonclient[grpc,http]' numpy
    python NAME.py --url localhost:8001 [--http-url localhost:8000] [--model NAME]

The model must follow the accumulator contract: one INPUT and one OUTPUT of dims [1], OUTPUT =
the sum of INPUT over the sequence's requests since its START. Waits are replayed with
time.sleep; a START that waited in the backlog is sent on a gRPC stream and its answer is checked
where the program received it; a reload of the model goes through the repository API (the server
must run --model-control-mode=explicit). Expectations are the ones recorded by the fuzzer, as
values; the fuzzer's own replay (`pytest fuzz/ -k NAME`) re-derives them with its reference model,
which judges timing more carefully (idle-timeout windows) than this script can.
"""
import argparse
import json
import queue
import re
import threading
import time

import numpy as np

WIRE_DTYPE = {"INT8": np.int8, "INT16": np.int16, "INT32": np.int32, "INT64": np.int64, "UINT8": np.uint8,
              "UINT16": np.uint16, "UINT32": np.uint32, "UINT64": np.uint64, "FP16": np.float16,
              "FP32": np.float32, "FP64": np.float64, "BOOL": np.bool_}
REQUEST_ID_PREFIX = re.compile(r"^\[request id: [^\]]*\] ")


def seq_id_of(d):
    return d["value"] if d["type"] == "string" else int(d["value"])


def shape_of(req):
    """INPUT's shape: [batch, 1], or [batch] for a model without a batch dimension."""
    return (req["batch"], 1) if req.get("batch_dim", True) else (req["batch"],)


def describe(req):
    flags = "".join(f for f, on in (("S", req["start"]), ("E", req["end"])) if on) or "-"
    extra = f" batch={req['batch']}" if req["batch"] != 1 else ""
    extra += f" dtype={req['dtype']}"
    return f"id={seq_id_of(req['id'])!r} value={req['value']!r} flags={flags}{extra}"


def encode(req, model, request_id=""):
    """A ModelInferRequest built by hand, as the fuzzer sends it: uint64 ids >= 2**63 go as the
    int64 two's complement, and id 0 is sent (tritonclient would leave it out)."""
    from tritonclient.grpc import service_pb2

    msg = service_pb2.ModelInferRequest(model_name=model, id=request_id)
    arr = np.full(shape_of(req), req["value"], dtype=WIRE_DTYPE.get(req["dtype"], np.int64))
    msg.inputs.add(name="INPUT", datatype=req["dtype"], shape=list(arr.shape))
    msg.raw_input_contents.append(arr.tobytes())
    seq_id = seq_id_of(req["id"])
    params = msg.parameters
    if isinstance(seq_id, str):
        params["sequence_id"].string_param = seq_id
    elif seq_id >= 2**63:
        params["sequence_id"].int64_param = seq_id - 2**64
    else:
        params["sequence_id"].int64_param = seq_id
    params["sequence_start"].bool_param = req["start"]
    params["sequence_end"].bool_param = req["end"]
    if req.get("timeout_us") is not None:
        params["timeout"].int64_param = req["timeout_us"]
    return msg


class Outcome:
    def __init__(self, value=None, status="OK", message="", partials=(), shape=None, datatype=None):
        # partials: the answers before the final one (an iterative sequence answers once per execution)
        self.value, self.status, self.message, self.partials = value, status, message, list(partials)
        self.shape = None if shape is None else tuple(int(d) for d in shape)  # OUTPUT's, as it came
        self.datatype = datatype

    @property
    def ok(self):
        return self.status == "OK"

    def __str__(self):
        if not self.ok:
            return f"{self.status}: {self.message}"
        return f"OUTPUT={self.value!r}" + (f" after {self.partials!r}" if self.partials else "")


def decode(response):
    for i, out in enumerate(response.outputs):
        if out.name == "OUTPUT" and out.datatype in WIRE_DTYPE and i < len(response.raw_output_contents):
            arr = np.frombuffer(response.raw_output_contents[i], dtype=WIRE_DTYPE[out.datatype])
            if arr.size:
                return Outcome(arr[0].item(), shape=out.shape, datatype=out.datatype)
    return Outcome(status="BAD_RESPONSE", message=f"no usable OUTPUT in {[o.name for o in response.outputs]}")


class Unary:
    def __init__(self, url):
        import grpc
        from tritonclient.grpc import service_pb2_grpc

        self.grpc = grpc
        self.stub = service_pb2_grpc.GRPCInferenceServiceStub(grpc.insecure_channel(url))

    def infer(self, req, model, timeout_s):
        try:
            return decode(self.stub.ModelInfer(encode(req, model), timeout=timeout_s))
        except self.grpc.RpcError as err:
            code = err.code()
            status = "CLIENT_TIMEOUT" if code == self.grpc.StatusCode.DEADLINE_EXCEEDED else code.name
            return Outcome(status=status, message=err.details() or "")

    def give_up(self, req, model):
        """Sends the request and cancels it at once."""
        call = self.stub.ModelInfer.future(encode(req, model), timeout=5.0)
        call.cancel()
        try:
            return decode(call.result(timeout=10))
        except self.grpc.FutureCancelledError:
            return Outcome(status="CANCELLED", message="cancelled by the client")
        except self.grpc.RpcError as err:
            return Outcome(status=err.code().name, message=err.details() or "")


class Http:
    def __init__(self, url):
        import tritonclient.http as httpclient

        self.mod = httpclient
        self.client = httpclient.InferenceServerClient(url, network_timeout=60.0)

    def infer(self, req, model, timeout_s):
        arr = np.full(shape_of(req), req["value"], dtype=WIRE_DTYPE.get(req["dtype"], np.int64))
        tensor = self.mod.InferInput("INPUT", list(arr.shape), req["dtype"])
        tensor.set_data_from_numpy(arr)
        try:
            result = self.client.infer(model, [tensor], sequence_id=seq_id_of(req["id"]),
                                       sequence_start=req["start"], sequence_end=req["end"],
                                       timeout=req.get("timeout_us"))
        except self.mod.InferenceServerException as err:
            status = {"400": "INVALID_ARGUMENT", "503": "UNAVAILABLE"}.get(str(err.status()), str(err.status()))
            return Outcome(status=status, message=err.message())
        out = result.as_numpy("OUTPUT")
        return Outcome(out.reshape(-1)[0].item(), shape=out.shape, datatype=result.get_output("OUTPUT")["datatype"]) \
            if out is not None and out.size else Outcome(
            status="BAD_RESPONSE", message="no OUTPUT")


class Stream:
    """One gRPC bidirectional stream (ModelStreamInfer), as one fuzz client holds it. Each request
    carries a ticket as its id; responses (errors included) echo it."""

    def __init__(self, url):
        import grpc
        from tritonclient.grpc import service_pb2_grpc

        self.grpc = grpc
        self.channel = grpc.insecure_channel(url)
        self.stub = service_pb2_grpc.GRPCInferenceServiceStub(self.channel)
        self.lock = threading.Lock()
        self.pending, self.next, self.outbox, self.call, self.reader = {}, 0, None, None, None
        self.partials = {}  # request id -> the answers before its final one
        self.sent_forms = {}  # request id -> its INPUT's (shape, datatype)

    def warm(self, timeout_s):
        """Connects now, not at the first send (which then goes out at once)."""
        self.grpc.channel_ready_future(self.channel).result(timeout=timeout_s)

    def _requests(self, outbox):
        while True:
            msg = outbox.get()
            if msg is None:
                return
            yield msg

    def _read(self, call):
        try:
            for response in call:
                rid, flag = response.infer_response.id, response.infer_response.parameters.get("triton_final_response")
                with self.lock:
                    if not response.error_message and flag is not None and not flag.bool_param:
                        self.partials.setdefault(rid, []).append(decode(response.infer_response))
                        continue  # a decoupled model's answer before its final one
                    box, partials = self.pending.pop(rid, None), self.partials.pop(rid, [])
                    sent = self.sent_forms.pop(rid, None)
                if box is not None:
                    if response.error_message:
                        got = Outcome(status="ERROR", message=response.error_message)
                    elif partials and not response.infer_response.outputs:
                        got, partials = partials[-1], partials[:-1]  # a final flag sent alone, after the answers
                    else:
                        got = decode(response.infer_response)
                    # of all its answers, the first shaped or typed otherwise than its INPUT is the one to tell
                    got.shape, got.datatype = next(((a.shape, a.datatype) for a in [got, *partials]
                                                    if a.ok and strayed((a.shape, a.datatype), sent)),
                                                   (got.shape, got.datatype))
                    got.partials = [p.value for p in partials]
                    box.put(got)
        except self.grpc.RpcError as err:
            self._fail_pending(err.code().name, err.details() or "stream ended")
        else:
            self._fail_pending("STREAM_CLOSED", "the server closed the stream before responding")

    def _fail_pending(self, status, message):
        with self.lock:
            orphans, self.pending = self.pending, {}
        for box in orphans.values():
            box.put(Outcome(status=status, message=message))

    def open(self):
        """Starts the call now, not at the first send (whose request then goes out at once)."""
        if self.call is None:
            self.outbox = queue.Queue()
            self.call = self.stub.ModelStreamInfer(self._requests(self.outbox))
            self.reader = threading.Thread(target=self._read, args=(self.call,), daemon=True)
            self.reader.start()

    def stage(self, req, model):
        """(the request encoded, its box), not sent yet: push() sends it."""
        box = queue.Queue(maxsize=1)
        with self.lock:
            rid = f"r{self.next}"
            self.next += 1
            self.pending[rid] = box
            self.sent_forms[rid] = (shape_of(req), req["dtype"])
        msg = encode(req, model, rid)
        # a decoupled model may send its final flag alone, after its answers: only asked for, it comes
        msg.parameters["triton_enable_empty_final_response"].bool_param = True
        return msg, box

    def push(self, msg):
        self.open()
        self.outbox.put(msg)

    def cancel(self):
        if self.call is not None:
            self.call.cancel()

    def send(self, req, model):
        msg, box = self.stage(req, model)
        self.push(msg)
        return box

    def infer(self, req, model, timeout_s):
        try:
            return self.send(req, model).get(timeout=timeout_s)
        except queue.Empty:
            return Outcome(status="CLIENT_TIMEOUT", message=f"no response within {timeout_s} s")

    def close(self, cancel_requests=False, timeout_s=30.0):
        call, self.call = self.call, None
        if call is None:
            return
        if cancel_requests:
            call.cancel()
        self.outbox.put(None)  # always: else gRPC's request thread waits in the iterator forever
        self.reader.join(timeout_s)
        self._fail_pending("CANCELLED" if cancel_requests else "CLIENT_TIMEOUT", "stream closed before the response")


def ended(got):
    """The error of a request its sequence's end swept up (the fuzzer's checker.cancels.swept, or the
    START-flag refusal): CANCELLED with an empty message; on a stream, whose errors carry no
    status, an error that is empty or says it was cancelled. A hang, a lost connection or an
    empty response is none."""
    message = REQUEST_ID_PREFIX.sub("", got.message)
    if "must specify the START flag" in message:
        return True
    if got.status == "ERROR":
        return message == "" or "cancel" in message.lower()
    return got.status == "CANCELLED" and message == ""


def same(a, b):
    """Two sums agree: equal (integers exactly: a UINT64 sum past 2**53 is not a float), or both
    NaN (a float sum past inf - inf)."""
    if isinstance(a, int) and isinstance(b, int):
        return a == b
    a, b = float(a), float(b)
    return a == b or (a != a and b != b)


def matches(expect, got, via):
    """Whether an outcome keeps the recorded expectation (the fuzzer's check_prompt, on values):
    {"answer": v} or {"queued": v}: OUTPUT v (after the "partials" answers, when it has them);
    {"cancelled": true}: anything but an answer;
    {"ended_or": [v...]}: an error (the sequence ended with its cancelled request; an empty response
    is none) or one of those OUTPUTs (the server's timing left it possible that it was not queued);
    {"any_order": [v...]}:
    one of those OUTPUTs (one of several requests of a sequence sent at once); {"refusal": {...}}: that error (its status compared on gRPC, where it is exact)."""
    if "cancelled" in expect:
        return not got.ok
    if "ended_or" in expect:
        return ended(got) if not got.ok else any(same(got.value, v) for v in expect["ended_or"])
    if "any_order" in expect:
        return got.ok and any(same(got.value, v) for v in expect["any_order"])
    if "answer" in expect or "queued" in expect:
        value = expect.get("answer", expect.get("queued"))
        partials = expect.get("partials", [])
        return got.ok and same(got.value, value) and len(got.partials) == len(partials) and \
            all(same(g, v) for g, v in zip(got.partials, partials))
    refusal = expect["refusal"]
    same_status = via != "grpc" or got.status == refusal["status"]
    return not got.ok and same_status and REQUEST_ID_PREFIX.sub("", got.message) == refusal["message"]


def strayed(form, sent):
    """An answer's OUTPUT (shape, datatype) is not its INPUT's `sent` (what was not read is not judged)."""
    return sent is not None and any(got is not None and got != want for got, want in zip(form, sent))


def well_formed(req, got, dtype):
    """An answer's OUTPUT has its INPUT's shape and the model's datatype `dtype` (the fuzzer's
    answers_well_formed). An error, or what an answer did not say, is not judged."""
    return not got.ok or ((got.shape is None or got.shape == shape_of(req))
                          and (got.datatype is None or got.datatype == dtype))


def reload_model(url, model):
    """A fresh copy of the model through the repository API: unload, then load."""
    import tritonclient.grpc as grpcclient

    client = grpcclient.InferenceServerClient(url)
    try:
        client.unload_model(model)
        client.load_model(model)
    except Exception as err:  # noqa: BLE001 - said, and the replay goes on
        print(f"       (cannot reload {model}: {err}; the server needs --model-control-mode=explicit, "
              f"and without the reload the outcome depends on what the model served before)")
        return
    print("       (reloaded through the repository API)")


def spared(fault, i) -> bool:
    """Whether the fault's i-th call is spared: sent with no deadline, it must be answered right."""
    every = fault.get("spare_every", 0)
    return every > 0 and i % every == every - 1


def give_up_in_flight(url, model, spec, fault):
    """The deadlines fault: a START+END on each id over unary gRPC, at_once calls in flight
    together (one channel each), each given up after deadline_us (0: cancelled as soon as sent)
    but the spared ones. The give_up fault, and a decoupled model's deadlines, go on streams of
    their own instead (an iterative model's without END). Returns (how the calls ended, the
    spared calls not answered right)."""
    if spec.get("decoupled") or fault["name"] == "give_up":
        statuses = give_up_streams(url, model, spec, fault)
    else:
        units = [Unary(url) for _ in range(max(1, fault["at_once"]))]
        statuses = []
        for first in range(0, len(fault["ids"]), len(units)):
            boxes = []
            for i, (unit, seq_id) in enumerate(zip(units, fault["ids"][first:first + len(units)]), first):
                req = whole_sequence(seq_id, spec, end=True)
                box = queue.Queue(maxsize=1)
                send = (lambda u, r: u.infer(r, model, 5.0)) if spared(fault, i) else \
                    (lambda u, r: u.infer(r, model, fault["deadline_us"] / 1e6)) if fault["deadline_us"] else \
                    (lambda u, r: u.give_up(r, model))
                threading.Thread(target=lambda u=unit, r=req, b=box, f=send: b.put(f(u, r)), daemon=True).start()
                boxes.append(box)
            statuses += [came(b, 10) for b in boxes]
    return counted([o.status for o in statuses]), answered_wrong(spec, fault, statuses)


def came(box, timeout_s):
    """What a call's box holds within `timeout_s`: a call that never ended is a hang."""
    try:
        return box.get(timeout=timeout_s)
    except queue.Empty:
        return Outcome(status="CLIENT_TIMEOUT", message=f"no answer within {timeout_s} s")


def answered_wrong(spec, fault, outcomes) -> list:
    """'id N: what came' for each of the fault's calls that was spared or answered, and did not
    come back its whole sequence's answer."""
    want = whole_answer(spec)
    return [f"id {seq_id}: {got}" for i, (seq_id, got) in enumerate(zip(fault["ids"], outcomes))
            if (spared(fault, i) or got.ok) and not (got.ok and same(got.value, want))]


def give_up_streams(url, model, spec, fault) -> list:
    outcomes, at_once = [], max(1, fault["at_once"])
    for first in range(0, len(fault["ids"]), at_once):
        streams = [Stream(url) for _ in fault["ids"][first:first + at_once]]
        for s in streams:  # opened and encoded first: the calls go together
            s.open()
        staged = [s.stage(whole_sequence(seq_id, spec, end=not spec.get("iterations")), model)
                  for s, seq_id in zip(streams, fault["ids"][first:first + at_once])]
        boxes, sent = [box for _, box in staged], []
        for s, (msg, _) in zip(streams, staged):
            sent.append(time.monotonic())
            s.push(msg)
        given_up = []
        for i, (s, box, at) in enumerate(zip(streams, boxes, sent), first):
            time.sleep(max(0.0, at + fault["deadline_us"] / 1e6 - time.monotonic()))  # each its own deadline
            given_up.append(box.empty() and not spared(fault, i))
            if given_up[-1]:
                s.cancel()  # (closed below: a close waits for its reader)
        for s, gave_up in zip(streams, given_up):
            if gave_up:
                s.close(cancel_requests=True, timeout_s=5.0)
        outcomes += [came(b, 10) for b in boxes]
        for s in streams:
            s.close(cancel_requests=True, timeout_s=5.0)
    return outcomes


def whole_answer(spec):
    """What a whole sequence of the deadlines fault answers last: its 1 added once per execution."""
    return spec.get("initial_sum", 0) + (spec.get("iterations") or 1)


def whole_sequence(seq_id, spec, end: bool) -> dict:
    """The deadlines fault's request on `seq_id`: a START of value 1 (with END, or not)."""
    return {"id": {"type": "uint64", "value": seq_id}, "value": 1, "start": True, "end": end, "dtype": spec["dtype"],
            "batch": 1, "batch_dim": spec["max_batch_size"] > 0}


def counted(statuses) -> str:
    """'3 CANCELLED, 5 OK': how many calls ended with each status."""
    return ", ".join(f"{statuses.count(s)} {s}" for s in sorted(set(statuses)))


def model_statistics(url, model) -> dict:
    """The model's inference and execution counts, and its success and fail counts and times (ms)."""
    import tritonclient.grpc as grpcclient

    out = {}
    for m in grpcclient.InferenceServerClient(url).get_inference_statistics(model).model_stats:
        s = m.inference_stats
        for name, value in (("inference_count", m.inference_count), ("execution_count", m.execution_count),
                            ("success", s.success.count), ("success ms", s.success.ns / 1e6),
                            ("fail", s.fail.count), ("fail ms", s.fail.ns / 1e6)):
            out[name] = out.get(name, 0) + value
    return out


class Player:
    """Plays one entry's steps against the server: one method per kind of step (KINDS), each
    printing what it sent and, where the step records an expectation, the verdict."""

    def __init__(self, entry, args, url):
        self.entry, self.args, self.url, self.spec = entry, args, url, entry["spec"]
        # A decoupled model takes neither unary calls nor HTTP: those steps go over a stream of their own.
        self.unary = Stream(url) if self.spec.get("decoupled") else Unary(url)
        self.http = Http(args.http_url.removeprefix("http://")) if args.http_url and not self.spec.get("decoupled") else None
        self.streams, self.parked, self.touched, self.diverged = {}, {}, [], []
        self.asides = {}  # client -> answers to come of requests not waited for, oldest first
        self.held = {}  # client -> its HELD requests' answers to come, oldest first (burst, crowd)
        self.scratch = {}  # a step family's own state, by its name
        self.backlog_wait = args.timeout + (len(entry["steps"]) + 2) * self.spec["idle_s"] * 2
        for prepare in PREPARES:
            prepare(self)

    def stream(self, client):
        return self.streams.setdefault(client, Stream(self.url))

    def verdict(self, step, got, via):
        if step.get("expect") is None:
            print(f"       got      {got}   (no expectation recorded: not checked)")
            return
        ok = matches(step["expect"], got, via)
        misshapen = step.get("request") and not well_formed(step["request"], got, self.spec["dtype"])
        if ok and misshapen:
            ok = False
            print(f"       OUTPUT came back shaped {list(got.shape)} as {got.datatype}, INPUT was sent shaped "
                  f"{list(shape_of(step['request']))}, the model's datatype is {self.spec['dtype']}")
        print(f"       expected {step['expected']}\n       got      {got}   {'ok' if ok else '<-- DIVERGES'}")
        if not ok:
            self.diverged.append(step["index"])

    def play(self, step):
        if step["wait_s"] and step["kind"] not in OWN_WAIT:
            time.sleep(step["wait_s"])
        client, req = step["client"], step["request"]
        who = f"client {client}" if client is not None else "all clients"
        line = f"{step['index']:3d}. {who}: {step['action']}" + (f" (waited {step['wait_s']:.3f} s)" if step["wait_s"] else "")
        print(line + (f" {describe(req)} via {step['via']}" if req else ""))
        if req is not None:
            self.touched.append(req["id"])
        KINDS.get(step["kind"], Player.unknown)(self, step)

    def close_stream(self, step):
        if step["client"] in self.streams:
            self.streams.pop(step["client"]).close()

    def cancel_queued(self, step):
        client = step["client"]
        box = self.parked.pop(client, None)
        if client in self.streams:
            self.streams.pop(client).close(cancel_requests=True)
        got = box.get(timeout=self.args.timeout) if box is not None else Outcome(status="NOTHING", message="no request")
        self.verdict(step, got, "stream")

    def send_later(self, step, stream=None):  # on `stream`, or a unary call; answer_later reads its answer
        if stream is not None:
            box = stream.send(step["request"], self.args.model)
        else:
            box = queue.Queue(maxsize=1)
            threading.Thread(target=lambda: box.put(self.unary.infer(step["request"], self.args.model, self.args.timeout)),
                             daemon=True).start()
        self.asides.setdefault(step["client"], []).append(box)

    def answer_later(self, step, via):  # the answer of the client's oldest request not waited for
        boxes = self.asides.get(step["client"]) or []
        try:
            got = boxes.pop(0).get(timeout=self.args.timeout + 1) if boxes else Outcome(status="NOTHING", message="no request")
        except queue.Empty:  # a stream's answer that never came (a unary call's thread says so itself)
            got = Outcome(status="CLIENT_TIMEOUT", message=f"no answer within {self.args.timeout + 1:.1f} s")
        self.verdict(step, got, via)

    def answer(self, step):
        client = step["client"]
        box = self.held[client].pop(0) if step["kind"] == "held_answer" and self.held.get(client) else self.parked.pop(client, None)
        if box is None:
            print("       (already answered)")
            return
        try:
            got = box.get(timeout=self.backlog_wait)
        except queue.Empty:
            got = Outcome(status="CLIENT_TIMEOUT", message=f"no answer within {self.backlog_wait:.1f} s")
        self.verdict(step, got, "stream")

    def held_request(self, step):  # a client may pipeline several: answered in order
        self.held.setdefault(step["client"], []).append(self.stream(step["client"]).send(step["request"], self.args.model))
        print("       (sent with the steps next to it, not waited for: its answer is checked below)")

    def queued(self, step):
        self.parked[step["client"]] = self.stream(step["client"]).send(step["request"], self.args.model)
        time.sleep(0.05)  # let it reach the server before the next step (another connection)
        print("       (queued: its answer is checked where the program received it)")

    def fault(self, step):
        name = (step.get("fault") or {}).get("name")
        if name == "reload":
            for s in self.streams.values():  # an open stream keeps the old copy alive
                s.close(cancel_requests=True, timeout_s=self.args.timeout)
            self.streams.clear()
            # an ensemble's state is its step's: the fresh copy is the step's
            model = self.args.model
            reload_model(self.url, self.spec.get("step") or model if model == self.entry["model"] else model)
        elif name in ("deadlines", "give_up"):
            counts, wrong = give_up_in_flight(self.url, self.args.model, self.spec, step["fault"])
            print(f"       {counts}")
            for line in wrong:
                print(f"       answered wrong (expected {whole_answer(self.spec)}): {line}   <-- DIVERGES")
            if wrong:
                self.diverged.append(step["index"])
        else:
            print("       (a nemesis fault: not replayed here)")

    def request(self, step):
        client, req, via = step["client"], step["request"], step["via"]
        if via == "stream":
            got = self.stream(client).infer(req, self.args.model, self.args.timeout)
        elif via == "http" and self.http is not None:
            got = self.http.infer(req, self.args.model, self.args.timeout)
        else:
            got = self.unary.infer(req, self.args.model, self.args.timeout)
        # a decoupled model's steps all went over streams, whose errors carry no status
        self.verdict(step, got, "stream" if self.spec.get("decoupled") else via if via != "http" or self.http else "grpc")

    def silence(self, step):  # pause, go_silent, leave_to_expire: the recorded wait was slept
        pass

    def unknown(self, step):
        print(f"       (a {step['kind']} step: this script does not play it; a newer triton-seqfuzz wrote it)")

    def leave_as_found(self):
        """Nothing waits, no sequence holds a slot."""
        for s in self.streams.values():
            s.close(cancel_requests=True, timeout_s=self.args.timeout)
        for d in {json.dumps(t, sort_keys=True): t for t in self.touched}.values():
            seq_id = seq_id_of(d)
            if seq_id not in (0, "") and not (isinstance(seq_id, str) and len(seq_id) > 128):
                self.unary.infer({"id": d, "value": 0, "start": False, "end": True, "dtype": self.spec["dtype"],
                                  "batch": 1, "batch_dim": self.spec["max_batch_size"] > 0}, self.args.model, 2.0)


# Every kind of step a program records (the fuzzer's values.Kind), and how this script plays it:
# copied in below from where each kind registered its play (fuzz/steps.py; the core kinds' call the
# Player's methods above, from fuzz/corpus/replay.py).
KINDS = {}
PREPARES = []  # (player) -> None, before the first step
OWN_WAIT = set()  # kinds whose play waits its recorded wait_s itself, where it has to

# @@ the step families' plays @@


def main(entry, argv=None):
    """Replays a corpus entry (its JSON, as a dict); returns the exit status."""
    parser = argparse.ArgumentParser(description=f"Replays triton-seqfuzz corpus entry {entry['name']}.")
    parser.add_argument("--url", default="localhost:8001", help="gRPC address of the Triton (HOST:PORT)")
    parser.add_argument("--http-url", help="HTTP address; without it, HTTP steps are sent over unary gRPC")
    parser.add_argument("--model", default=entry["model"], help="model to replay against (default: %(default)s)")
    parser.add_argument("--timeout", type=float, default=5.0, help="seconds a prompt answer may take")
    args = parser.parse_args(argv)
    url = args.url.removeprefix("grpc://")
    spec = entry["spec"]
    print(f"corpus entry {entry['name']} ({entry['status']}): [{entry['invariant']}] {entry['detail']}")
    print(f"recorded on Triton {entry['triton_version']}, model {args.model} ({spec['strategy']}, "
          f"{spec['slots_per_instance']} slot(s) x {spec['instances']} instance(s), {spec['dtype']}, "
          f"idle {spec['idle_s'] * 1000:.0f} ms)")
    try:
        import tritonclient.grpc as grpcclient

        meta = grpcclient.InferenceServerClient(url).get_server_metadata()
        print(f"replaying against Triton {meta.version} at {url}")
    except Exception as err:  # noqa: BLE001 - any failure to reach it ends the run
        print(f"cannot reach a Triton at {url}: {err}")
        return 2
    player = Player(entry, args, url)
    # A finding in the statistics: what they rose by is shown, for a reader to hold against the answers
    statistics = entry["invariant"] == "stats_agree"
    before = model_statistics(url, args.model) if statistics else None
    for step in entry["steps"]:
        player.play(step)
    if statistics:
        time.sleep(0.3)  # the server counts just after it answers
        rose = {k: v - before.get(k, 0) for k, v in model_statistics(url, args.model).items()}
        print("the model's statistics rose by: " + ", ".join(f"{k} {v}" for k, v in rose.items()))
        print("this script checks the answers only: a stats_agree finding shows in these rises (replay the "
              "entry with `pytest fuzz/ --corpus-dir DIR` to have them judged)")
    player.leave_as_found()
    if player.diverged:
        print(f"DIVERGED at step(s) {', '.join(map(str, player.diverged))} of {len(entry['steps'])}")
        return 1
    print(f"no divergence: all {len(entry['steps'])} steps as expected")
    return 0
