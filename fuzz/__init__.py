"""Model-based state-machine fuzzer for Triton's sequence batcher."""
