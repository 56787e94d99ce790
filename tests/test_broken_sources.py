"""The broken models themselves (tests/broken_models.py), without a server: each patch still finds
its place in the template, the patched source compiles, and no two bugs share a name (a name is the
model's folder: the second would overwrite the first's, which then no campaign meets)."""
from __future__ import annotations

import collections

import pytest

from .broken_models import ALL_BUGS, FIRST_AFTER_LOAD


def test_every_bug_has_a_name_of_its_own():
    twice = [name for name, n in collections.Counter(b.name for b in ALL_BUGS).items() if n > 1]
    assert twice == []


@pytest.mark.parametrize("bug", [b for b in (*ALL_BUGS, FIRST_AFTER_LOAD) if b.variant.backend != "native"],
                         ids=lambda b: b.name)
def test_every_python_bug_patches_the_template_and_compiles(bug):
    compile(bug.source(), f"broken_{bug.name}/1/model.py", "exec")  # source() asserts each patch found its place
