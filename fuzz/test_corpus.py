"""`pytest fuzz/` replays every corpus entry (corpus/*.json) before fuzzing: one test per entry,
held to the entry's status (fuzz/corpus/__init__.py). A file that cannot be read fails its own test."""
import pytest

from fuzz.checker.divergences import known_for
from fuzz.checker.invariants import InvariantViolation
from fuzz.corpus.replay import ReplayNeeds, check_entry


def test_corpus(triton, lone_servers, corpus_item, fuzz_options, request):
    if corpus_item.error is not None:
        raise corpus_item.error
    entry = corpus_item.entry
    triton = lone_servers.for_model(triton, entry.model)
    loaded = {m.name for m in triton.client().get_model_repository_index().models if m.state == "READY"}
    if entry.model not in loaded:
        pytest.skip(f"{entry.name}: model {entry.model} is not loaded on the Triton at {triton.grpc_url}")
    guard = next((d.guard for d in known_for(entry.spec, triton.version) if d.no_string_ids), None)
    if guard and entry.sends_string_ids():
        pytest.skip(f"{entry.name} sends string ids, and on Triton {triton.version} the fuzzer does not: {guard}")
    if entry.diverges_on(triton.version):
        request.applymarker(pytest.mark.xfail(
            strict=True, raises=InvariantViolation,
            reason=f"known divergence {entry.divergence} on Triton {triton.version}: [{entry.invariant}] "
                   f"{entry.detail}. If this replay passes, the build no longer shows it: set the entry's "
                   f"status to must-pass (and update fuzz/checker/divergences.py)"))
    try:
        check_entry(triton, entry, corpus_path=str(fuzz_options.corpus_dir), settings=fuzz_options.fuzz_settings)
    except ReplayNeeds as needs:  # e.g. a restart, against a server this run did not start
        pytest.skip(str(needs).splitlines()[-1])
