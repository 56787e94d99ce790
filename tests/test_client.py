"""The stream client's Box and its decoding of a response, without a server."""
import queue
import threading

import numpy as np
import pytest
from tritonclient.grpc import service_pb2

from fuzz.harness.client import Box, StreamClient, decode
from fuzz.values import Outcome
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
