#!/usr/bin/env python3
"""Reproducer of triton-seqfuzz corpus entry py_implicit_direct_s4_i2_fp32_cser--sums_match--7228a4efba

Status: known-divergence on Triton 2.39.0, 2.41.0, 2.51.0. Recorded on Triton 2.51.0: [sums_match] wrong running sum.
Model: py_implicit_direct_s4_i2_fp32_cser: direct, 4 slot(s) x 2 instance(s), FP32, idle 2000 ms, controls END,READY,START implicit-state

The program (what each client sent, what the reference model required, what came back):

    1. client 0: start the other-typed twin py_implicit_direct_s4_i2_fp32_cser id='1' value=1.0 flags=S via stream
         expected OUTPUT=1.0
         got      OUTPUT=1.0
    2. client 0: continue py_implicit_direct_s4_i2_fp32_cser id='1' value=0.0 flags=- via stream
         expected OUTPUT=1.0
         got      OUTPUT=0.0

Run: python py_implicit_direct_s4_i2_fp32_cser--sums_match--7228a4efba.py --url HOST:GRPC_PORT [--http-url HOST:HTTP_PORT] [--model NAME]
It replays py_implicit_direct_s4_i2_fp32_cser--sums_match--7228a4efba.json with seqfuzz_replay.py, both beside it (tritonclient and numpy only);
exit 1: a step diverged, 0: none did, 2: no Triton at --url.
"""
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ENTRY = json.loads((HERE / "py_implicit_direct_s4_i2_fp32_cser--sums_match--7228a4efba.json").read_text(encoding="utf-8"))

if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    from seqfuzz_replay import main

    sys.exit(main(ENTRY))
