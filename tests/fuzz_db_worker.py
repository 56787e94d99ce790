"""One fuzzing worker for tests/test_fuzz_db.py, in its own process: fuzzes MODEL on the Triton at
URL with Hypothesis's example database at DB (a --fuzz-db value), and prints what it saw as JSON.

    python -m tests.fuzz_db_worker URL MODEL DB find    # generate (no shrinking): save the first failure
    python -m tests.fuzz_db_worker URL MODEL DB reuse   # no generation: only replay the database
"""
import json
import sys

from hypothesis import HealthCheck, Phase, settings
from hypothesis.database import ExampleDatabase

from fuzz.campaign import fuzz_model
from fuzz.db import open_database
from fuzz.harness.server import ExternalTriton


class Counting(ExampleDatabase):
    """The database, counting the examples it hands out: a reuse worker replays each of them."""

    def __init__(self, inner):
        super().__init__()
        self.inner, self.fetched = inner, 0

    def fetch(self, key):
        for value in self.inner.fetch(key):
            self.fetched += 1
            yield value

    def save(self, key, value):
        self.inner.save(key, value)

    def delete(self, key, value):
        self.inner.delete(key, value)


def main(url, model, db, mode):
    phases = {"find": [Phase.generate], "reuse": [Phase.reuse]}[mode]
    database = Counting(open_database(db))
    budget = settings(max_examples=100, stateful_step_count=10, derandomize=False, database=database,
                      phases=phases, deadline=None, suppress_health_check=list(HealthCheck))
    result, error = fuzz_model(ExternalTriton(url), model, budget)
    print(json.dumps({"examples": result.examples, "wall_s": result.wall_s, "fetched": database.fetched,
                      "failures": [[f.invariant, f.expected_divergence] for f in result.failures],
                      "unexpected_error": repr(error) if error else None}))


if __name__ == "__main__":
    main(*sys.argv[1:])
