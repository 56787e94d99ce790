#!/usr/bin/env python3
"""Reproducer of triton-seqfuzz corpus entry py_corrid_direct_s2_i1_fp32_cserc_str--slots_reused--83c1fabd0a

Status: known-divergence on Triton 2.36.0, 2.39.0, 2.41.0, 2.44.0, 2.46.0, 2.51.0. Recorded on Triton 2.51.0: [slots_reused] refused a request that must be accepted.
Model: py_corrid_direct_s2_i1_fp32_cserc_str: direct, 2 slot(s) x 1 instance(s), FP32, idle 500 ms, controls CORRID,END,READY,START CORRID STRING

The program (what each client sent, what the reference model required, what came back):

    1. all clients: go silent past the idle timeout (waited 0.011 s)
    2. client 0: start after timeout py_corrid_direct_s2_i1_fp32_cserc_str id=1 value=0.0 flags=S via stream
         expected OUTPUT=0.0
         got      ERROR: unexpected number of string elements 2 for inference input 'CORRID', expecting 1

Run: python py_corrid_direct_s2_i1_fp32_cserc_str--slots_reused--83c1fabd0a.py --url HOST:GRPC_PORT [--http-url HOST:HTTP_PORT] [--model NAME]
It replays py_corrid_direct_s2_i1_fp32_cserc_str--slots_reused--83c1fabd0a.json with seqfuzz_replay.py, both beside it (tritonclient and numpy only);
exit 1: a step diverged, 0: none did, 2: no Triton at --url.
"""
import json
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ENTRY = json.loads((HERE / "py_corrid_direct_s2_i1_fp32_cserc_str--slots_reused--83c1fabd0a.json").read_text(encoding="utf-8"))

if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    from seqfuzz_replay import main

    sys.exit(main(ENTRY))
