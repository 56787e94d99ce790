"""The stream client's Box, without a server: the queue interface the engine reads answers through."""
import queue
import threading

import pytest

from fuzz.client import Box, StreamClient
from fuzz.values import Outcome


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
    assert StreamClient.wait(Box(), 0.01).status == "CLIENT_TIMEOUT"
