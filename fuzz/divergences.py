"""Known divergences: places where a Triton build breaks a promise the reference model keeps.

They are findings, not exceptions to the model. Each names the builds it was seen on, how to
recognise the variant it affects and the symptom; tests and the fuzzer use this table to keep a
known divergence visible (expected, reported) and to fail loudly when a build stops showing it.
"""
from __future__ import annotations

import attrs


@attrs.frozen
class KnownDivergence:
    key: str
    summary: str
    versions: tuple  # Triton versions on which it was observed
    symptom: str  # what comes back instead

    def applies(self, variant, version: str | None) -> bool:
        return version in self.versions and _AFFECTS[self.key](variant)


_AFFECTS = {
    "python-backend-drops-implicit-state":
        lambda v: getattr(v, "backend", None) == "python" and v.flavour == "implicit",
    "string-corrid-control-rejected":
        lambda v: "CORRID" in v.controls and v.corrid_type == "string",
}

KNOWN = (
    KnownDivergence(
        "python-backend-drops-implicit-state",
        "The Python backend does not carry sequence_batching.state: every request sees the initial "
        "INPUT_STATE and OUTPUT_STATE is dropped, so OUTPUT is INPUT instead of the running sum.",
        versions=("2.51.0",),
        symptom="OUTPUT equals the request's own INPUT"),
    KnownDivergence(
        "string-corrid-control-rejected",
        "A model whose CORRID control is TYPE_STRING refuses every sequence request, string or integer "
        "id, under both strategies.",
        versions=("2.51.0",),
        symptom="INVALID_ARGUMENT: unexpected number of string elements 2 for inference input 'CORRID', "
                "expecting 1"),
)


def known_for(variant, version: str | None) -> list[KnownDivergence]:
    return [d for d in KNOWN if d.applies(variant, version)]
