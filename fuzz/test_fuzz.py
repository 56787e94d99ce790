"""`pytest fuzz/`: one state-machine test per model on the session's Triton. A failure (a known
divergence included) is written to the corpus with its reproducer, unless the corpus already
holds it or --no-corpus-write is given."""
from fuzz import corpus
from fuzz.campaign import fuzz_model, violations_in
from fuzz.plugin import _death, reproduction
from fuzz.harness.server import stopping


def test_sequence_batcher(request, triton, lone_servers, fuzz_model_name, fuzz_options, fuzz_results,
                          corpus_written):
    triton = lone_servers.for_model(triton, fuzz_model_name)
    try:
        result, error = fuzz_model(triton, fuzz_model_name, fuzz_options.hypothesis_settings(),
                                   budget_s=fuzz_options.budget_s, fuzz_settings=fuzz_options.fuzz_settings)
    except KeyboardInterrupt as stop:  # the summary and the report still say what this model did
        if getattr(stop, "partial_result", None) is not None:
            fuzz_results.append(stop.partial_result)
        raise
    fuzz_results.append(result)
    if error is None and all(result.beside_the_point(f) for f in result.failures):
        proof_of_work(result)  # (a known divergence fuzzed on past, or a race the build may show, is a pass too)
    saved = []  # the corpus entries of this model's new findings, for the report's last lines
    if fuzz_options.corpus_write and not stopping():  # nothing seen after a stop is a finding
        for f in result.failures:
            # (not a race of the build: its entry would be a strict xfail that a replay passes by chance)
            if f.records and not f.race:
                note = ("the server died while this program ran; not replayed (a death from outside, e.g. the "
                        "OOM killer, looks the same)" if f.invariant == "server_alive" else
                        "not replayed alone (timing, or what earlier examples left in the model): not fully shrunk" if f.flaky
                        else "")
                entry = corpus.make_entry(result.model_spec, result.triton_version, f.invariant, f.detail,
                                          f.records, divergence=f.expected_divergence, note=note, accepts=f.accepted)
                corpus_written.append(corpus.record(fuzz_options.corpus_dir, entry))
                if f.expected_divergence is None:
                    saved.append(corpus_written[-1][0])
    if error is None and not stopping():
        start_again_after_a_known_crash(triton, result)
    if error is not None:
        violations = violations_in(error)
        if violations and saved:  # the report ends in the commands that replay what it shows
            last = violations[-1]
            last.args = (last.args[0] + "\n" + "\n".join(reproduction(request.config, triton, p) for p in saved),
                         *last.args[1:])
        raise error


def start_again_after_a_known_crash(triton, result) -> None:
    """A known divergence that kills the server (iterative-cancel-crash) is no failure of the run,
    but every later model's campaign would find no server: the embedded one is started again (a
    server someone else runs, or one that xdist's controller owns, cannot be from here: those
    campaigns then fail on the dead server, and the run stops there)."""
    died = _death(triton)
    if died is None or not hasattr(triton, "restart") or triton.grpc_url is None:
        return
    known = next((f.expected_divergence for f in result.failures if f.invariant == "server_alive"), None)
    if known is None:
        return
    print(f"\n{result.model}: the Triton under test died as known divergence {known} shows; started again "
          f"for the models after it")
    triton.restart(graceful=False)


def proof_of_work(result):
    """A campaign that passes must have tested something: examples ran, requests went out, and
    what came back reached a goal. Else a pass would say nothing. (A floor, not a bar: the ci
    profile's derandomized campaign on the one-slot slot model sends 6 requests in 33 steps, all
    refused, which reaches 5 goals but not `live rows >= 1`.)"""
    reached = [g.name for g in result.coverage.goals if g.reached]
    assert result.examples >= 1 and result.requests >= 1 and (reached or not result.coverage.goals), (
        f"{result.model}: the campaign passed without testing: {result.examples} examples, {result.requests} "
        f"requests, none of its {len(result.coverage.goals)} goals reached")
