"""The native implicit-state backend: its build (cached by source, one clear line without a
compiler or on a compile error) and, live, the promises Triton's core makes about the state it
carries for a slot."""
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fuzz.harness.client import GrpcClient, Request
from fuzz.spec import ModelSpec
from modelgen import native, native_variants
from modelgen import __main__ as modelgen_cli

ROOT = Path(__file__).resolve().parent.parent
needs_cc = pytest.mark.skipif(native.unavailable_reason() is not None, reason=str(native.unavailable_reason()))


@pytest.fixture
def no_compiler(monkeypatch, tmp_path):
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.delenv("CC", raising=False)
    return str(empty)


@needs_cc
def test_the_backend_is_built_once_per_source(tmp_path):
    first = native.build(into=tmp_path)
    built_at = first.stat().st_mtime_ns
    assert first.name == "libtriton_seqfuzz_accum.so" and first.stat().st_size > 0
    assert native.build(into=tmp_path) == first and first.stat().st_mtime_ns == built_at  # from the cache
    other = native.build(native.SOURCE + "\n/* another source */\n", into=tmp_path)
    assert other != first and other.parent.parent == first.parent.parent
    assert not [p for p in tmp_path.rglob(".build.*")], "a build left its scratch folder"


@needs_cc
def test_a_source_the_compiler_refuses_is_one_line(tmp_path):
    with pytest.raises(native.NativeUnavailable) as refused:
        native.build("#error planted\n", into=tmp_path)
    message = str(refused.value)
    assert "could not build the native backend 'seqfuzz_accum'" in message and "planted" in message
    assert "\n" not in message


def test_without_a_compiler_the_native_models_are_left_out_with_one_line(no_compiler, tmp_path, capsys):
    assert native.unavailable_reason() == ("no C compiler (cc, gcc or $CC) on PATH to build the native "
                                           "implicit-state backend")
    with pytest.raises(native.NativeUnavailable):
        native.build(into=tmp_path)
    assert modelgen_cli.main(["--models-dir", str(tmp_path / "models"), "--backend", "native"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == f"error: cannot write native models: {native.unavailable_reason()}"
    # pytest fuzz/: the header says why, and no native model is collected
    listed = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q",
                             str(ROOT / "fuzz" / "test_fuzz.py")], capture_output=True, text=True, cwd=ROOT,
                            env={**os.environ, "PATH": no_compiler}, timeout=120)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert "Traceback" not in listed.stdout + listed.stderr
    collected = [line for line in listed.stdout.splitlines() if "test_sequence_batcher[" in line]
    assert collected and not [line for line in collected if "[nat_" in line or "_split2" in line], listed.stdout
    header = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only",
                             str(ROOT / "fuzz" / "test_fuzz.py")], capture_output=True, text=True, cwd=ROOT,
                            env={**os.environ, "PATH": no_compiler}, timeout=120).stdout
    assert f"native implicit-state models and the split ensemble left out: {native.unavailable_reason()}" in header


# -- live, on the session's server: what the core promises about the state ------------------------

ONE_SLOT = next(v for v in native_variants() if v.slots == 1 and v.instances == 1)
FROM_DATA = next(v for v in native_variants() if v.initial_sum and v.strategy == "oldest" and v.slots == 2)


def _send(client, variant, seq_id, value, **flags):
    got = client.infer(Request(variant.name, seq_id, value, dtype=variant.dtype.upper(), batch_dim=variant.batching,
                               **flags))
    assert got.status == "OK", got
    return got.value


@needs_cc
@pytest.mark.parametrize("variant", [ONE_SLOT, FROM_DATA], ids=lambda v: v.name)
def test_a_start_gets_the_initial_state_whatever_its_slot_held(triton, variant):
    """After an END, after an idle expiry, on a restart of a live id and after a reload, a START
    sees the initial state, never what ran in the slot before it."""
    initial = ModelSpec.fetch(triton, variant.name).initial_sum
    assert initial == variant.initial_sum
    client = GrpcClient(triton.grpc_url)
    try:
        assert _send(client, variant, 11, 5, start=True) == initial + 5
        assert _send(client, variant, 11, 3, end=True) == initial + 8
        assert _send(client, variant, 12, 1, start=True) == initial + 1  # after an END
        assert _send(client, variant, 12, 4) == initial + 5
        assert _send(client, variant, 12, 2, start=True) == initial + 2  # a live id started again
        time.sleep(variant.idle_us / 1e6 * 2 + 0.5)
        assert _send(client, variant, 13, 6, start=True) == initial + 6  # after 12 idled out
        assert _send(client, variant, 13, 1) == initial + 7
        triton.reload_model(variant.name)
        assert _send(client, variant, 14, 9, start=True) == initial + 9  # after a reload
        assert _send(client, variant, 14, 1, end=True) == initial + 10  # (its slot free for the next test)
    finally:
        client.close()


def test_older_builds_get_only_the_native_models_they_load():
    """2.39 has no use_same_buffer_for_input_output (its config parser refuses the field, and with
    it the whole server); 2.41 and 2.51 take every native model."""
    from modelgen import loadable_on

    on_239 = {v.name for v in loadable_on(native_variants(), "2.39.0")}
    assert on_239 == {v.name for v in native_variants() if not v.same_buffer} and on_239
    assert loadable_on(native_variants(), "2.41.0") == native_variants()


def test_int64_sums_are_the_native_and_python_backends_only():
    """The framework graphs stay 32-bit; the native backend sums INT64 too, and the Python model
    any dtype its config declares (but the native backend none narrower)."""
    from modelgen import Variant

    assert Variant("implicit", "direct", 1, 1, "int64", backend="native").dtype == "int64"
    assert Variant("implicit", "direct", 1, 1, "int64", backend="python").dtype == "int64"
    with pytest.raises(ValueError, match="dtype 'int64': the 'onnx' backend takes"):
        Variant("implicit", "direct", 1, 1, "int64", backend="onnx")
    with pytest.raises(ValueError, match="dtype 'fp16': the 'native' backend takes"):
        Variant("implicit", "direct", 1, 1, "fp16", backend="native")


def test_a_second_state_is_declared_beside_the_first_and_only_natively():
    from modelgen import Variant, model_config

    variant = next(v for v in native_variants() if v.two_states)
    states = model_config(variant).sequence_batching.state
    assert [(s.input_name, s.output_name) for s in states] == [("INPUT_STATE", "OUTPUT_STATE"),
                                                               ("INPUT_STATE_B", "OUTPUT_STATE_B")]
    assert states[0].initial_state == states[1].initial_state and states[0].data_type == states[1].data_type
    with pytest.raises(ValueError, match="second state"):
        Variant("implicit", "direct", 1, 1, two_states=True)  # the Python backend


_KEEP_ON_PADDING = "  if (!ready) {\n    memcpy(sum, state, bytes);\n"


@needs_cc
def test_a_padding_row_cannot_write_its_slots_state(tmp_path):
    """Under direct, a slot whose sequence sent nothing this execution is a padding row (READY 0),
    a null request whose states are the core's throwaway copies: a backend that writes state there
    (here: the slot's state + 1000) must leave the live sequence's state alone. And a server
    restart leaves no state behind."""
    from fuzz.harness.server import EmbeddedTriton
    from modelgen import Variant, model_config, render

    assert _KEEP_ON_PADDING in native.SOURCE, "the backend changed: re-point the planted write"
    library = native.build(native.SOURCE.replace(
        _KEEP_ON_PADDING, _KEEP_ON_PADDING + "    int32_t planted;\n    memcpy(&planted, sum, 4);\n"
                                             "    planted += 1000;\n    memcpy(sum, &planted, 4);\n", 1),
        into=tmp_path / "build")
    variant = Variant("implicit", "direct", 2, 1, "int32", controls=("START", "END", "READY"), backend="native")
    folder = tmp_path / "models" / variant.name
    (folder / "1").mkdir(parents=True)
    (folder / "1" / library.name).write_bytes(library.read_bytes())
    (folder / "config.pbtxt").write_text(render(model_config(variant)))
    with EmbeddedTriton(tmp_path / "models", workdir=tmp_path / "w") as server:
        client = GrpcClient(server.grpc_url)
        try:
            assert _send(client, variant, 1, 5, start=True) == 5  # a in slot 0
            assert _send(client, variant, 2, 1, start=True) == 1  # b in slot 1: slot 0 a padding row
            for i in range(2, 5):
                assert _send(client, variant, 2, 1) == i  # b alone again and again
            assert _send(client, variant, 1, 1, end=True) == 6  # a's state is still its own
            assert _send(client, variant, 2, 1, end=True) == 5
            assert _send(client, variant, 3, 4, start=True) == 4  # left live across a restart:
        finally:
            client.close()
        server.restart()
        client = GrpcClient(server.grpc_url)
        try:
            assert _send(client, variant, 3, 1, start=True) == 1  # a restart resets the state too
        finally:
            client.close()
