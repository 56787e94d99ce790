"""What came back from a build's run: test outcomes from pytest's junit XML, and campaign results
from the plugin's fuzz report."""
from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import attrs

from ..campaign import ModelResult
from ..checker.invariants import INVARIANTS

_KINDS = {"test_corpus": "corpus", "test_seed": "seed", "test_sequence_batcher": "fuzz"}


@attrs.frozen
class TestOutcome:
    kind: str  # "corpus", "seed", "fuzz" or "other"
    param: str  # the corpus entry, the seed case (MODEL-seedN) or the model
    outcome: str  # passed, failed, xfailed, xpassed (a strict xfail that passed), skipped, error
    message: str = ""

    @property
    def model(self) -> str:
        if self.kind == "corpus":
            return self.param.split("--")[0]  # entry names are MODEL--INVARIANT--DIGEST
        if self.kind == "seed":
            return self.param.rsplit("-seed", 1)[0]
        return self.param

    @property
    def invariant(self) -> str:
        """The promise it is about: a corpus entry's recorded one, else the one its failure names."""
        parts = self.param.split("--")
        if self.kind == "corpus" and len(parts) == 3 and parts[1] in INVARIANTS:
            return parts[1]
        return named_invariant(self.message)

    @property
    def known(self) -> str | None:
        """The known divergence an expected failure is (test_corpus's xfail reason names it)."""
        m = re.search(r"known divergence (\S+) on Triton", self.message) if self.outcome == "xfailed" else None
        return m.group(1) if m else None


def named_invariant(message: str) -> str:
    """The invariant an InvariantViolation's message starts with ("[sums_match] ..."), or ""."""
    return next((m for m in re.findall(r"\[(\w+)\]", message) if m in INVARIANTS), "")


def parse_junit(xml_text: str) -> tuple:
    """TestOutcomes of a pytest --junitxml file's text."""
    out = []
    for case in ET.fromstring(xml_text).iter("testcase"):
        m = re.fullmatch(r"(\w+)\[(.*)\]", case.get("name", ""), re.S)
        func, param = (m.group(1), m.group(2)) if m else (case.get("name", ""), "")
        failure, error, skipped = case.find("failure"), case.find("error"), case.find("skipped")
        if failure is not None:
            message = failure.get("message", "")
            outcome = "xpassed" if message.startswith("[XPASS(strict)]") else "failed"
        elif error is not None:
            outcome, message = "error", error.get("message", "")
        elif skipped is not None:
            message = skipped.get("message", "")
            outcome = "xfailed" if skipped.get("type") == "pytest.xfail" else "skipped"
        else:
            outcome, message = "passed", ""
        if param == "NOTSET" and outcome == "skipped":
            continue  # the placeholder of an empty parameter set (no corpus entry for --model)
        out.append(TestOutcome(_KINDS.get(func, "other"), param, outcome, message))
    return tuple(out)


def parse_fuzz_report(text: str) -> tuple:
    """ModelResults of the plugin's --fuzz-report JSON."""
    return tuple(ModelResult.from_json(d) for d in json.loads(text)["models"])


def _read(path: Path, parse) -> tuple:
    try:
        return parse(path.read_text())
    except (OSError, ValueError, KeyError, ET.ParseError):
        return ()  # not written (killed, or nothing ran): the build's status says why
