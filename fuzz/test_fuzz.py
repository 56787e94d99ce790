"""`pytest fuzz/`: one state-machine test per model on the session's Triton. A failure (a known
divergence included) is written to the corpus with its reproducer, unless the corpus already
holds it or --no-corpus-write is given."""
from fuzz import corpus
from fuzz.campaign import fuzz_model
from fuzz.server import stopping


def test_sequence_batcher(triton, fuzz_model_name, fuzz_options, fuzz_results, corpus_written):
    try:
        result, error = fuzz_model(triton, fuzz_model_name, fuzz_options.hypothesis_settings(),
                                   budget_s=fuzz_options.budget_s, fuzz_settings=fuzz_options.fuzz_settings)
    except KeyboardInterrupt as stop:  # the summary and the report still say what this model did
        if getattr(stop, "partial_result", None) is not None:
            fuzz_results.append(stop.partial_result)
        raise
    fuzz_results.append(result)
    if fuzz_options.corpus_write and not stopping():  # nothing seen after a stop is a finding
        for f in result.failures:
            if f.records:
                note = ("the server died while this program ran; not replayed (a death from outside, e.g. the "
                        "OOM killer, looks the same)" if f.invariant == "server_alive" else
                        "Hypothesis could not replay it exactly (timing): not fully shrunk" if f.flaky else "")
                entry = corpus.make_entry(result.model_spec, result.triton_version, f.invariant, f.detail,
                                          f.records, divergence=f.expected_divergence, note=note)
                corpus_written.append(corpus.record(fuzz_options.corpus_dir, entry))
    if error is not None:
        raise error
