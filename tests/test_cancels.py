"""What a cancel_pipelined group's answers leave possible (fuzz/checker/cancels.py): pure."""
import operator

from fuzz.checker.cancels import Queue, one_of, swept
from fuzz.values import Outcome, Request

FIRST, WITNESS, BEHIND, AFTER = (Request("m", 1, v) for v in (2, 64, 4, 16))


def _queue(behind=3, then=operator.add):
    return Queue(1, (FIRST, WITNESS), (BEHIND,) * behind, then)


def test_an_answer_behind_that_no_place_in_the_queue_allows_is_a_wrong_sum():
    """The answers of requests behind that came before the cancel are running sums: each the sum
    after the queue up to it, on the group's base with the first and the witness run before it
    or not (where they ran among the queue is the server's). One that fits no place breaks
    sums_match at the cancel. (Before, only their count was read: a queue of 63 on a model that
    kept no state answered 1 each, and the failure showed only after the cancel, 70 steps long.)"""
    queue, ok = _queue(), Outcome
    assert queue.wrong_behind([ok(7), ok(11), None]) is None  # the first ran before them
    assert queue.wrong_behind([ok(5), ok(73), ok(77)]) is None  # the first after; the witness between
    assert queue.wrong_behind([ok(5), Outcome(None, "CANCELLED"), None]) is None
    wrong = queue.wrong_behind([ok(7), ok(7), None])
    assert wrong is not None and "request 2 of 3" in wrong[0] and wrong[1] == "OUTPUT=9 ... 75", wrong


def test_the_sums_a_group_leaves_are_its_queue_s_prefixes_on_any_of_the_requests_beside_it():
    queue = _queue(behind=2)
    assert queue.prefixes(3) == [3, 7, 11]
    assert queue.beside_sums() == {1, 3, 65, 67}
    assert queue.beside_sums(without=WITNESS) == {1, 3}
    twin = Request("m", 1, 2)  # equal to the first, but another request: `without` means that one only
    assert Queue(1, (FIRST, twin), (), operator.add).beside_sums(without=FIRST) == {1, 3}
    assert queue.any_sum(without=WITNESS) == {1, 5, 9, 3, 7, 11}  # a prefix of those behind, not any subset
    # the witness's sum after none, one or both of those behind ran before it (as if all ran: 75)
    assert queue.witness_sums(75, carries_state=True) == [67, 71, 75]
    assert queue.witness_sums(75, carries_state=False) == [75, 75, 75]  # then it tells nothing of them


def test_the_next_request_s_answer_says_whether_the_cancelled_one_ran_and_why_it_breaks_a_promise():
    queue = _queue(behind=1)
    assert queue.ran_behind(AFTER, Outcome(1 + 2 + 4 + 16))
    assert not queue.ran_behind(AFTER, Outcome(1 + 2 + 16))
    assert not Queue(1, (FIRST,), (Request("m", 1, 0),), operator.add).ran_behind(AFTER, Outcome(19))  # 0 tells nothing
    said = queue.went_on(AFTER, Outcome(1 + 2 + 16), late=False, ended=True, may_go_on=False)
    assert "while queued" in said and "failed with it" in said and said.endswith("went on without them (OUTPUT=19)")
    said = queue.went_on(AFTER, Outcome(None, "INTERNAL", "boom"), late=True, ended=False, may_go_on=True)
    assert "(queued, or running)" in said and said.endswith("refused with another error")


def test_a_swept_request_fails_cancelled_with_nothing_said_and_on_a_stream_as_an_error():
    assert swept(Outcome(None, "CANCELLED", ""))
    assert not swept(Outcome(None, "CANCELLED", "Locally cancelled by application!"))  # its own client gave up
    assert swept(Outcome(None, "ERROR", ""), "stream") and swept(Outcome(None, "ERROR", "request cancelled"), "stream")
    assert not swept(Outcome(None, "ERROR", "must specify the START flag"), "stream")
    assert one_of([1, 2, 3], 3) == "1 or 2 or 3" and one_of([1, 2, 3, 4], 3) == "1 ... 4"
