"""fuzz/progress.py: periodic lines on a terminal, silence elsewhere."""
import io
import time

from fuzz import progress
from fuzz.progress import Progress, Snapshot, line


def test_line_has_elapsed_counts_rate_and_failures():
    text = line("fuzz", 10.0, Snapshot(examples=3, steps=40, requests=200, failures=1))
    assert "10 s" in text and "3 examples" in text and "40 steps" in text
    assert "200 requests (20/s)" in text and "failures 1" in text


def test_prints_periodically_when_enabled():
    out = io.StringIO()
    with Progress("stress", lambda: Snapshot(requests=5), interval_s=0.02, stream=out) as p:
        time.sleep(0.2)
    assert p.printed >= 2
    assert out.getvalue().count("[stress]") == p.printed


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_less_often_in_a_log_than_on_a_terminal(monkeypatch):
    monkeypatch.setattr(progress, "_interval_s", None)
    assert Progress("fuzz", Snapshot, stream=io.StringIO()).interval_s == progress.LOG_S  # a file or a pipe
    assert Progress("fuzz", Snapshot, stream=Terminal()).interval_s == progress.TERMINAL_S
    monkeypatch.setattr(progress, "_interval_s", 0.0)  # --fuzz-progress 0
    out = io.StringIO()
    with Progress("fuzz", lambda: Snapshot(), stream=out) as p:
        time.sleep(0.05)
    assert not p.enabled and p.printed == 0 and out.getvalue() == ""
