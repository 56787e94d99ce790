"""The stream client's Box and its decoding of a response, without a server."""
import queue
import threading

import numpy as np
import pytest
from tritonclient.grpc import service_pb2

from fuzz.harness.client import Box, StreamClient, decode, input_array
from fuzz.values import Outcome, Request
from modelgen.variants import LIVE_ROWS_OUTPUT


def test_box_gives_what_was_put_once_then_is_empty():
    box = Box()
    assert box.empty()
    with pytest.raises(queue.Empty):
        box.get_nowait()
    assert StreamClient.poll(box, 0.0) is None
    box.put(Outcome(value=3))
    assert not box.empty()
    assert StreamClient.wait(box, 1.0).value == 3
    with pytest.raises(queue.Empty):
        box.get(timeout=0.01)


def test_box_wakes_a_waiting_reader_and_times_out_without_a_writer():
    box = Box()
    threading.Timer(0.05, box.put, args=(Outcome(value=7),)).start()
    assert box.get(timeout=5.0).value == 7
    box = Box()
    timed_out = StreamClient.wait(box, 0.01)
    assert timed_out.status == "CLIENT_TIMEOUT"
    assert timed_out.sent_at == box.started and timed_out.latency_s >= 0.01, "its history interval starts at the send"


def test_a_response_decodes_to_its_output_and_the_live_rows_a_generated_model_says():
    response = service_pb2.ModelInferResponse()
    response.outputs.add(name="OUTPUT", datatype="INT32", shape=[1, 1])
    response.raw_output_contents.append(np.array([[42]], np.int32).tobytes())
    assert decode(response, 0.0).value == 42 and decode(response, 0.0).live_rows is None  # a model that does not say
    response.outputs.add(name=LIVE_ROWS_OUTPUT, datatype="INT32", shape=[1, 1])
    response.raw_output_contents.append(np.array([[3]], np.int32).tobytes())
    got = decode(response, 0.0)
    assert (got.value, got.live_rows) == (42, 3)


def _stream_answer(rid, shape, final, datatype="INT32", value=5):
    from tritonclient.grpc import service_pb2

    r = service_pb2.ModelStreamInferResponse()
    ir = r.infer_response
    ir.id = rid
    ir.outputs.add(name="OUTPUT", datatype=datatype, shape=shape)
    ir.raw_output_contents.append(np.full(shape, value, {"INT32": np.int32, "INT64": np.int64}[datatype]).tobytes())
    ir.parameters["triton_final_response"].bool_param = final
    return r


@pytest.mark.parametrize("partial, final, told", [
    (([1, 2], "INT32"), ([1, 1], "INT32"), ((1, 2), "INT32")),  # a wrong answer before the final one
    (([1, 1], "INT32"), ([1, 2], "INT32"), ((1, 2), "INT32")),  # a wrong final answer after right ones
    (([1, 1], "INT32"), ([1, 1], "INT64"), ((1, 1), "INT64")),
    (([1, 1], "INT32"), ([1, 1], "INT32"), ((1, 1), "INT32")),
])
def test_a_streamed_request_tells_the_first_of_its_answers_shaped_or_typed_otherwise_than_its_input(partial, final, told):
    """answers_well_formed on a decoupled model's answers: whichever of them strays from the
    request's INPUT (shape, datatype) is the one its Outcome tells (a reviewer found a wrong final
    answer hidden behind right partial ones)."""
    import threading

    from fuzz.harness.client import Box, StreamClient

    c = StreamClient.__new__(StreamClient)
    c._lock, box = threading.Lock(), Box()
    c._pending, c._partials, c._last, c._forms, c._ended = {"r0": box}, {}, {}, {}, None
    c._sent_forms, c._calls, c._call = {"r0": ((1, 1), "INT32")}, {}, None
    c._read([_stream_answer("r0", partial[0], False, partial[1]), _stream_answer("r0", final[0], True, final[1])])
    got = box.get(timeout=1)
    assert got.ok and got.partials == (5,) and (got.shape, got.datatype) == told


def _bare_stream(call):
    """A StreamClient on a stand-in call, without a server: what its tables do, not the wire."""
    import queue
    import threading

    from fuzz.harness.client import StreamClient

    c = StreamClient.__new__(StreamClient)
    c._lock, c._next, c._ended, c._call, c._outbox = threading.Lock(), 0, None, call, queue.Queue()
    c._pending, c._partials, c._last, c._forms, c._sent_forms, c._calls = {}, {}, {}, {}, {}, {}
    return c


def _flag_alone(rid):
    """A final flag a decoupled model sent on its own (send(flags=FINAL)): no outputs, no error."""
    from tritonclient.grpc import service_pb2

    r = service_pb2.ModelStreamInferResponse()
    r.infer_response.id = rid
    r.infer_response.parameters["triton_final_response"].bool_param = True
    return r


def test_a_final_flag_sent_alone_closes_a_request_on_its_last_answer():
    """A decoupled model that answers, then sends its final flag alone (a common way to write one) is
    answered: its last answer is the final one, those before it the partials. A flag alone with no
    answer before it is still no answer (and a stream asks for such flags: without them the request
    above waited for good, a false hang on a correct model)."""
    from fuzz.harness.client import Request

    c = _bare_stream(None)
    messages, (once, twice, none) = c.prepare([Request("m", 5, 1, start=True), Request("m", 6, 1, start=True),
                                               Request("m", 7, 1, start=True)])
    assert all(m.parameters["triton_enable_empty_final_response"].bool_param for m in messages)
    c._read([_stream_answer("r0", [1, 1], False, value=4), _flag_alone("r0"),
             _stream_answer("r1", [1, 1], False, value=1), _stream_answer("r1", [1, 1], False, value=3),
             _flag_alone("r1"), _flag_alone("r2")])
    got = c.poll(once, 0)
    assert got.ok and got.value == 4 and got.partials == () and (got.shape, got.datatype) == ((1, 1), "INT32")
    got = c.poll(twice, 0)
    assert got.ok and got.value == 3 and got.partials == (1,)
    got = c.poll(none, 0)
    assert got.status == "BAD_RESPONSE" and "no OUTPUT in response" in got.message
    assert not c._last and not c._partials and not c._pending


def test_a_call_that_ends_fails_its_own_requests_only_and_those_prepared_for_it():
    """A reader that outlived close() ends later: the next call's requests are not its to fail.
    One prepared before its call ended and pushed after is failed at once (it would wait for a
    reader that is gone)."""
    from fuzz.harness.client import Request

    old, new = object(), object()
    c = _bare_stream(new)
    messages, (box,) = c.prepare([Request("m", 5, 1, start=True)])
    c.push(messages)
    c._fail_pending("CANCELLED", "the old call's reader ends", ended=old)
    assert c.poll(box, 0) is None and c._ended is None
    messages, (late,) = c.prepare([Request("m", 6, 1, start=True)])
    c._fail_pending("UNAVAILABLE", "the server went", ended=new)
    assert c.poll(box, 0).status == "UNAVAILABLE"
    c.push(messages)
    got = c.poll(late, 0)
    assert got.status == "UNAVAILABLE" and "already ended" in got.message, got
    assert c._outbox.qsize() == 1 and not c._pending and not c._calls  # only the first went out


def test_a_request_answered_but_never_flagged_final_says_what_it_answered():
    """A decoupled model that answers and holds its final flag back (flushed lazily, say) leaves
    the request incomplete: the timeout says what came, not "no response"."""
    from fuzz.harness.client import Request

    c = _bare_stream(None)
    _, (box,) = c.prepare([Request("m", 5, 1, start=True)])
    c._read([_stream_answer("r0", [1, 1], False, value=4)])
    got = StreamClient.wait(box, 0.01)
    assert got.status == "CLIENT_TIMEOUT" and "no final response" in got.message and "OUTPUT=4" in got.message
    silent = Box()
    assert StreamClient.wait(silent, 0.01).message == "no response within 0.01 s"


def test_a_unary_call_never_answered_times_out_as_a_box_does():
    """StreamClient.wait reads a unary call (UnaryCall) like a stream's box: a call still in flight
    at the bound is CLIENT_TIMEOUT, not a harness error (share_sequence waits so on unary calls)."""
    import grpc

    from fuzz.harness.client import UnaryCall

    class Pending:
        def add_done_callback(self, _):
            pass

        def result(self, timeout=None):
            raise grpc.FutureTimeoutError()

    got = StreamClient.wait(UnaryCall(Pending(), started=0.0), 0.01)
    assert got.status == "CLIENT_TIMEOUT" and got.message == "no response within 0.01 s"


def test_an_http_call_to_a_port_nobody_listens_on_comes_back_unavailable_as_grpc_says_it():
    """A refused or reset connection (a server that died) is an Outcome the engine reads as a
    lost connection, not an exception out of a replay (seen in CI: a shrink's replay over HTTP
    after the server was killed raised ConnectionRefusedError, and the finding was lost)."""
    import socket

    from fuzz.harness.client import HttpClient
    from fuzz.values import Request

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again below: nothing listens there
    got = HttpClient(f"127.0.0.1:{port}", timeout_s=2.0).infer(Request("m", 7, 1, start=True))
    assert got.status == "UNAVAILABLE" and "no connection" in got.message, got


def test_a_value_past_a_float_dtypes_range_goes_as_infinity_without_a_warning():
    """The fuzzer sends a float model values past its range on purpose; the cast to the wire's
    dtype takes them to infinity, as the reference does, and says nothing (a CI run warned)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        arr = input_array(Request("m", 7, 1e5, dtype="FP16"))
    assert arr.dtype == np.float16 and np.isinf(arr).all()
    assert input_array(Request("m", 7, 3, dtype="INT32")).dtype == np.int32
