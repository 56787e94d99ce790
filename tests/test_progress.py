"""fuzz/progress.py: periodic lines on a terminal, silence elsewhere."""
import io
import time

from fuzz.progress import Progress, Snapshot, line


def test_line_has_elapsed_counts_rate_and_failures():
    text = line("fuzz", 10.0, Snapshot(examples=3, steps=40, requests=200, failures=1))
    assert "10 s" in text and "3 examples" in text and "40 steps" in text
    assert "200 requests (20/s)" in text and "failures 1" in text


def test_prints_periodically_when_enabled():
    out = io.StringIO()
    with Progress("stress", lambda: Snapshot(requests=5), interval_s=0.02, stream=out, enabled=True) as p:
        time.sleep(0.2)
    assert p.printed >= 2
    assert out.getvalue().count("[stress]") == p.printed


def test_quiet_when_not_a_terminal():
    out = io.StringIO()  # isatty() is False: a log file or a pipe
    with Progress("fuzz", lambda: Snapshot(), interval_s=0.01, stream=out) as p:
        time.sleep(0.1)
    assert p.printed == 0 and out.getvalue() == ""
