"""Where a crashed tritonserver was (fuzz/harness/crash.py), without a server: its backtrace's
frames as offsets in their files, and named where addr2line is installed. (tests/test_final_alone.py
kills a live server and reads its death's reason line.)"""
import shutil

import pytest

from fuzz.harness import crash
from fuzz.harness.server import InstallNotFound, TritonInstall

BIN = "/opt/triton/bin/tritonserver"
# 2.51's death in the gRPC frontend's stream handler (stop 95), as its log printed it
LOG = f"""I1207 09:00:00.000 1 grpc_server.cc:2463] Started GRPCInferenceService at 127.0.0.1:8001
Signal (11) received.
 0# 0x000055C45694B52D in {BIN}
 1# 0x00007FE75C45A050 in /lib/x86_64-linux-gnu/libc.so.6
 2# 0x000055C4569BA97E in {BIN}
 3# 0x000055C4569A588B in {BIN}
 4# 0x00007FE75A2D44A3 in /lib/x86_64-linux-gnu/libstdc++.so.6
 5# 0x00007FE75C4A71F5 in /lib/x86_64-linux-gnu/libc.so.6
program:
  1. client 2: start ...
"""
MAPS = f"""55c4567bc000-55c4567fd000 r--p 00000000 00:2a 123 {BIN}
55c4567fd000-55c456d00000 r-xp 00041000 00:2a 123 {BIN}
7fe75c430000-7fe75c456000 r--p 00000000 00:2a 77 /lib/x86_64-linux-gnu/libc.so.6
7fe75c456000-7fe75c5ab000 r-xp 00026000 00:2a 77 /lib/x86_64-linux-gnu/libc.so.6
7ffd1c5e0000-7ffd1c601000 rw-p 00000000 00:00 0 [stack]
"""


def test_a_backtrace_becomes_offsets_in_its_files():
    bases = crash.bases_of(MAPS)
    assert bases == {BIN: 0x55C4567BC000, "/lib/x86_64-linux-gnu/libc.so.6": 0x7FE75C430000}
    number, frames = crash.crash(LOG, bases)
    assert number == 11 and [f.index for f in frames] == [0, 1, 2, 3, 4, 5], "the frames, up to the next line"
    assert [f.offset for f in frames[:4]] == [0x18F52D, 0x2A050, 0x1FE97E, 0x1E988B]
    assert frames[4].offset is None and frames[4].describe() == "0x7fe75a2d44a3 in libstdc++.so.6"
    site = crash.where(LOG, bases, most=2)  # (no such binary here: addr2line names nothing)
    assert site == "SIGSEGV in tritonserver+0x1fe97e <- tritonserver+0x1e988b"


def test_no_crash_no_site_and_the_last_crash_counts():
    assert crash.crash("I1207 started\nE1207 some error\n", {}) == (None, [])
    assert crash.where("", {}) == ""
    again = LOG + "Signal (6) received.\n 0# 0x0000000000001000 in /x/a\n 1# 0x2000 in /x/b\n 2# 0x3000 in /x/c\n"
    assert crash.where(again, {"/x/c": 0x1000}) == "SIGABRT in c+0x2000"
    assert crash.signal_name(9) == "SIGKILL" and crash.signal_name(99) == "signal 99"


@pytest.mark.skipif(shutil.which("addr2line") is None, reason="addr2line is not installed")
def test_addr2line_names_the_function_in_the_embedded_build():
    try:
        install = TritonInstall.find()
    except InstallNotFound as err:
        pytest.skip(str(err))
    real = str(install.server_bin)
    log, bases = LOG.replace(BIN, real), {real: 0x55C4567BC000}
    number, frames = crash.crash(log, bases)
    (frame,) = crash.named(frames[2:3])
    from importlib.metadata import version

    if version("nvidia-pytriton") != "0.7.0":
        pytest.skip("not the build this backtrace came from (nvidia-pytriton 0.7.0: Triton 2.51)")
    assert "ModelStreamInferHandler" in frame.function, frame
    assert crash.where(log, bases, most=1) == f"SIGSEGV in {frame.function} (tritonserver+0x1fe97e)"


def test_a_name_is_short():
    assert crash._short("triton::server::grpc::ModelStreamInferHandler::Process(triton::server::grpc::State*, bool)") \
        == "triton::server::grpc::ModelStreamInferHandler::Process"
    assert crash._short("_ZZN6triton6server4grpc12InferHandlerIN9inference20GRPCInferenceService") == ""
    assert crash._short("??") == "" and len(crash._short("a" * 300)) == 100
