"""Model-based state-machine fuzzer for Triton's sequence batcher."""
import os

# Every fork here is followed by an exec (tritonserver, pytest sub-sessions), which gRPC's fork
# handlers are not needed for, and they are not safe while other threads call into gRPC: once in
# a clean-clone CI, a tritonserver's fork aborted in them ("Other threads are currently calling
# into gRPC, skipping fork() handlers", then "Check failed: next_worker->state == KICKED").
# gRPC's documented setting for fork-then-exec programs; read when gRPC starts, so set first.
os.environ.setdefault("GRPC_ENABLE_FORK_SUPPORT", "false")
