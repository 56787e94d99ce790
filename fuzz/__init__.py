"""Model-based state-machine fuzzer for Triton's sequence batcher.

The folders follow Jepsen's split, data flowing one way: generator/ (the rules, which choose),
harness/ (the engine and the clients that talk to Triton, and the server under test),
checker/ (the pure reference model and the checkers that judge what came back), nemesis/
(faults as operations), corpus/ (saved programs, their replay, shrinking and standalone
reproducers). At the top: the drivers (plugin.py, campaign.py, stress.py, matrix/, rejudge.py)
and the values every part shares (values.py, spec.py).
"""
import os

# Every fork here is followed by an exec (tritonserver, pytest sub-sessions), which gRPC's fork
# handlers are not needed for, and they are not safe while other threads call into gRPC: once in
# a clean-clone CI, a tritonserver's fork aborted in them ("Other threads are currently calling
# into gRPC, skipping fork() handlers", then "Check failed: next_worker->state == KICKED").
# gRPC's documented setting for fork-then-exec programs; read when gRPC starts, so set first.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
