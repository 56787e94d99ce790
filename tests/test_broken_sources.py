"""The broken models themselves (tests/broken_models.py), without a server: each patch still finds
its place in the template (or the native backend's source), a patched Python model compiles (a
native one is built where a campaign needs it), and no two bugs share a name (a name is the
model's folder: the second would overwrite the first's, which then no campaign meets)."""
from __future__ import annotations

import collections

import pytest

from fuzz.checker.invariants import INVARIANTS

from .broken_models import ALL_BUGS, FIRST_AFTER_LOAD


def test_every_bug_has_a_name_of_its_own():
    twice = [name for name, n in collections.Counter(b.name for b in (*ALL_BUGS, FIRST_AFTER_LOAD)).items() if n > 1]
    assert twice == []


@pytest.mark.parametrize("bug", (*ALL_BUGS, FIRST_AFTER_LOAD), ids=lambda b: b.name)
def test_every_bug_patches_its_source_and_a_python_one_compiles(bug):
    source = bug.source()  # asserts each patch found its place (the native backend's C source too)
    if bug.variant.backend != "native":
        compile(source, f"broken_{bug.name}/1/model.py", "exec")


def test_every_bug_breaks_promises_the_fuzzer_keeps():
    # the oracle benchmark counts a bug caught only where the promise broken is one of its `breaks`
    unknown = {b.name: b.breaks for b in ALL_BUGS if not b.breaks or not set(b.breaks) <= set(INVARIANTS)}
    assert unknown == {}
