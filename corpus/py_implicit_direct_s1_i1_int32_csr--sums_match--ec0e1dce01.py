#!/usr/bin/env python3
"""Reproducer of triton-seqfuzz corpus entry py_implicit_direct_s1_i1_int32_csr--sums_match--ec0e1dce01

Status: known-divergence on Triton 2.36.0, 2.39.0, 2.41.0, 2.44.0, 2.46.0, 2.51.0. Recorded on Triton 2.51.0: [sums_match] wrong running sum.
Model: py_implicit_direct_s1_i1_int32_csr: direct, 1 slot(s) x 1 instance(s), INT32, idle 500 ms, controls READY,START implicit-state

The program (what each client sent, what the reference model required, what came back):

    1. all clients: go silent past the idle timeout (waited 0.010 s)
    2. client 0: start after timeout py_implicit_direct_s1_i1_int32_csr id=1 value=1 flags=S via stream
         expected OUTPUT=1
         got      OUTPUT=1
    3. client 0: continue py_implicit_direct_s1_i1_int32_csr id=1 value=0 flags=- via stream
         expected OUTPUT=1
         got      OUTPUT=0

Run: python py_implicit_direct_s1_i1_int32_csr--sums_match--ec0e1dce01.py --url HOST:GRPC_PORT [--http-url HOST:HTTP_PORT] [--model NAME]
It replays py_implicit_direct_s1_i1_int32_csr--sums_match--ec0e1dce01.json with seqfuzz_replay.py, both beside it (tritonclient and numpy only);
exit 1: a step diverged, 0: none did, 2: no Triton at --url.
"""
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ENTRY = json.loads((HERE / "py_implicit_direct_s1_i1_int32_csr--sums_match--ec0e1dce01.json").read_text(encoding="utf-8"))

if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    from seqfuzz_replay import main

    sys.exit(main(ENTRY))
