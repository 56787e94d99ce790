"""The implicit-state options (L0_implicit_state) on a live Triton. On the Python backend, which
does not carry implicit state (a documented limit, the known divergence
python-backend-drops-implicit-state): Triton reads an initial state from the data file modelgen
writes, hands it to every START, and the fuzzer's reference starts its sums there; which builds
take the buffer options; and what a build does with growable memory on a CPU instance, which its
own rule forbids. On the native backend, which carries the state: the same options with running
sums. The framework models that carry the state are checked offline in test_modelgen_backends.py.
"""
from __future__ import annotations

import attrs
import pytest

from fuzz.harness.client import GrpcClient
from fuzz.checker.model import BatcherModel
from fuzz.harness.server import EmbeddedTriton, ServerStartError
from fuzz.spec import ModelSpec
from fuzz.values import Answer
from modelgen import Variant, native, write_repository

from .release_installs import embedded_install

FROM_DATA = Variant("implicit", "direct", 1, 1, "int32", controls=("START", "READY"), initial_sum=7)
ONE_BUFFER = Variant("implicit", "oldest", 2, 1, "fp32", controls=("START", "READY", "CORRID"), initial_sum=-3,
                     same_buffer=True)
# Growable memory on a CPU instance: modelgen refuses it (Triton's own rule), so the test writes
# the option into a config by hand, as a user could.
GROWABLE_ON_CPU = attrs.evolve(FROM_DATA, same_buffer=True)
GROWABLE_NAME = GROWABLE_ON_CPU.name
NOT_ON_GPU = "'use_growable_memory' can only work with KIND_GPU model instances"


def _repo(path, variants, growable_on_cpu=False, growable_name=GROWABLE_NAME):
    write_repository(variants, path)
    if growable_on_cpu:
        config = path / growable_name / "config.pbtxt"
        text = config.read_text()
        assert "use_same_buffer_for_input_output: true" in text
        config.write_text(text.replace("use_same_buffer_for_input_output: true",
                                       "use_same_buffer_for_input_output: true\n    use_growable_memory: true"))
    return path


def _starts_from_its_data_file(server, variant):
    """A START's answer is its value plus the file's; the fuzzer reads that value from the live
    config and its reference gives the same sum. The next request shows the known divergence."""
    spec = ModelSpec.fetch(server, variant.name)
    assert spec.initial_sum == variant.initial_sum and spec.implicit_state
    model = BatcherModel(spec, margin_s=0.1, prompt_s=1.0)
    client = GrpcClient(server.grpc_url)
    try:
        first = client.infer(spec.request(11, 5, start=True))
        assert first.ok and first.value == variant.initial_sum + 5
        assert model.expect(spec.request(11, 5, start=True), 0.0) == Answer(first.value)
        # python-backend-drops-implicit-state: each request gets the initial state again, not the
        # OUTPUT_STATE before it (the reference wants initial + 5 + 2)
        second = client.infer(spec.request(11, 2))
        assert second.ok and second.value == variant.initial_sum + 2
        assert model.expect(spec.request(11, 2), 0.1) == Answer(variant.initial_sum + 7)
    finally:
        client.close()


@pytest.mark.parametrize("release", [None, "0.5.0"], ids=["2.51", "2.41"])
def test_initial_state_from_data_and_the_buffer_options_load_and_start_from_the_file(tmp_path, release):
    repo = _repo(tmp_path / "models", [FROM_DATA, ONE_BUFFER, GROWABLE_ON_CPU], growable_on_cpu=True)
    with EmbeddedTriton(repo, workdir=tmp_path, **embedded_install(release)) as server:
        server.wait_models_ready([FROM_DATA.name, ONE_BUFFER.name, GROWABLE_NAME])
        _starts_from_its_data_file(server, FROM_DATA)
        _starts_from_its_data_file(server, ONE_BUFFER)
        # growable-memory-on-cpu-loads: the build takes the config, then fails each sequence's state
        # at its START, logs it, and runs the request without INPUT_STATE (the model fails on it)
        client = GrpcClient(server.grpc_url)
        try:
            got = client.infer(ModelSpec.fetch(server, GROWABLE_NAME).request(12, 5, start=True))
        finally:
            client.close()
        assert got.status == "INTERNAL" and "'NoneType' object has no attribute 'as_numpy'" in got.message
        assert f"Failed to initialize sequence state: {NOT_ON_GPU}" in server.log_tail(200)


def test_2_39_starts_from_the_data_file_and_refuses_the_single_buffer(tmp_path):
    install = embedded_install("0.4.2")
    with EmbeddedTriton(_repo(tmp_path / "a", [FROM_DATA]), workdir=tmp_path, **install) as server:
        server.wait_models_ready([FROM_DATA.name])
        _starts_from_its_data_file(server, FROM_DATA)
    with pytest.raises(ServerStartError, match='has no field named "use_same_buffer_for_input_output"'):
        EmbeddedTriton(_repo(tmp_path / "b", [ONE_BUFFER]), workdir=tmp_path, **install).start()


def test_modelgen_refuses_growable_memory_where_triton_would_fail_it():
    with pytest.raises(ValueError, match="KIND_GPU instances only"):
        Variant("implicit", "direct", 1, 1, backend="onnx", same_buffer=True, growable=True)
    with pytest.raises(ValueError, match="KIND_GPU instances only"):
        attrs.evolve(GROWABLE_ON_CPU, growable=True)


NATIVE = [attrs.evolve(v, backend="native") for v in (FROM_DATA, ONE_BUFFER, GROWABLE_ON_CPU)]


@pytest.mark.skipif(native.unavailable_reason() is not None, reason=str(native.unavailable_reason()))
@pytest.mark.parametrize("release", [None, "0.5.0"], ids=["2.51", "2.41"])
def test_on_the_native_backend_the_options_carry_running_sums_and_growable_on_cpu_loses_the_state(tmp_path,
                                                                                                   release):
    from_data, one_buffer, growable = NATIVE
    repo = _repo(tmp_path / "models", NATIVE, growable_on_cpu=True, growable_name=growable.name)
    with EmbeddedTriton(repo, workdir=tmp_path, **embedded_install(release)) as server:
        server.wait_models_ready([v.name for v in NATIVE])
        client = GrpcClient(server.grpc_url)
        try:
            for variant in (from_data, one_buffer):
                spec = ModelSpec.fetch(server, variant.name)
                sums = [client.infer(spec.request(11, v, start=i == 0)).value for i, v in enumerate((5, 2, -1))]
                assert sums == [variant.initial_sum + s for s in (5, 7, 6)], (variant.name, sums)
            # growable-memory-on-cpu-loads: the request reaches the backend without INPUT_STATE
            got = client.infer(ModelSpec.fetch(server, growable.name).request(12, 5, start=True))
        finally:
            client.close()
        assert got.status == "INVALID_ARGUMENT" and "unknown request input name INPUT_STATE" in got.message
        assert f"Failed to initialize sequence state: {NOT_ON_GPU}" in server.log_tail(200)
