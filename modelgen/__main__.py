"""python -m modelgen --models-dir DIR: write the accumulator model repository.

--backend python (the default) writes the fixed python set the fuzzer is built against. The
framework backends (onnx, tensorflow, tensorrt) and the native backend (modelgen's own C
backend, compiled on first use and copied into each model) write implicit-state accumulators
(native: and the split ensemble, whose front step is native);
--dtype, --shape, --batching and --strategy choose which. --backend all writes every backend this
machine can build and says why it skips the others (tensorrt needs an NVIDIA GPU, native a C
compiler).
"""
from __future__ import annotations

import argparse
import sys

from .backends import BackendUnavailable, unavailable_reason
from .repository import write_repository
from .variants import DEFAULT_IDLE_US, DTYPES, SUM_HEAVY_IDLE_US, IMPLICIT_BACKENDS, STRATEGIES, implicit_variants, python_variants, slow_variants, split_variants

_BATCHING = {"both": (True, False), "batched": (True,), "no-batch": (False,)}
# Triton's TensorFlow backend does not implement implicit state (its docs name onnxruntime,
# tensorrt, pytorch; python models handle it themselves), so say so whenever tf models are written.
_TF_NOTE = ("note: Triton's tensorflow backend does not support implicit state (sequence_batching.state); "
            "the tf_* SavedModels are checked against TensorFlow directly, and a Triton server may refuse "
            "to load them")


def _shape(text: str) -> tuple:
    try:
        dims = tuple(int(d) for d in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"shape must be comma-separated positive ints like 1 or 2,3; got {text!r}")
    if not dims or any(d <= 0 for d in dims):
        raise argparse.ArgumentTypeError(f"shape dims must be positive (variable dims are not supported); got {text!r}")
    return dims


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m modelgen", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models-dir", "--models_dir", dest="models_dir", required=True,
                        help="repository folder to write (created if missing)")
    parser.add_argument("--backend", default="python", choices=["python", *IMPLICIT_BACKENDS, "all"],
                        help="backend of the generated models (default python)")
    parser.add_argument("--idle-timeout-us", type=int, default=None,
                        help=f"max_sequence_idle_microseconds of every model (default: per purpose, "
                             f"{DEFAULT_IDLE_US} for most, {SUM_HEAVY_IDLE_US} for three many-slot python models)")
    parser.add_argument("--slow-ms", type=int, default=0, metavar="MS",
                        help="also write the slow python models (modelgen.slow_variants): each execution "
                             "sleeps MS milliseconds, for the fuzzer's slow-execution nemesis")
    parser.add_argument("--only", action="append", default=[], metavar="SUBSTRING",
                        help="write only models whose name contains SUBSTRING (repeatable)")
    implicit = parser.add_argument_group(f"implicit-state backends ({', '.join(IMPLICIT_BACKENDS)})")
    implicit.add_argument("--dtype", action="append", choices=DTYPES,
                          help="dtype of INPUT/OUTPUT/state (repeatable; default all of %(choices)s)")
    implicit.add_argument("--shape", type=_shape, help="dims of INPUT/OUTPUT/state without the batch dim, "
                          "comma-separated (default 1)")
    implicit.add_argument("--batching", choices=sorted(_BATCHING),
                          help="batched (max_batch_size 4), no-batch (max_batch_size 0) or both (default)")
    implicit.add_argument("--strategy", action="append", choices=STRATEGIES,
                          help="sequence batcher strategy (repeatable; default all of %(choices)s)")
    args = parser.parse_args(argv)
    if args.idle_timeout_us is not None and args.idle_timeout_us <= 0:
        parser.error(f"--idle-timeout-us must be positive, got {args.idle_timeout_us}")
    if args.slow_ms < 0:
        parser.error(f"--slow-ms must be >= 0, got {args.slow_ms}")
    given = [f"--{n}" for n in ("dtype", "shape", "batching", "strategy") if getattr(args, n) is not None]
    if args.backend == "python" and given:
        parser.error(f"{', '.join(given)}: only for the implicit-state backends ({', '.join(IMPLICIT_BACKENDS)}); "
                     "the python set is fixed (see modelgen.python_variants)")

    backends = ["python", *IMPLICIT_BACKENDS] if args.backend == "all" else [args.backend]
    variants = []
    for backend in backends:
        if backend == "python":
            variants += python_variants(idle_us=args.idle_timeout_us)
            if args.slow_ms:
                variants += slow_variants(idle_us=args.idle_timeout_us or DEFAULT_IDLE_US, delay_ms=args.slow_ms)
            continue
        reason = unavailable_reason(backend)
        if reason:
            if args.backend != "all":
                print(f"error: cannot write {backend} models: {reason}", file=sys.stderr)
                return 2
            print(f"skipping backend {backend}: {reason}", file=sys.stderr)
            continue
        variants += implicit_variants(backend, dtypes=tuple(dict.fromkeys(args.dtype or DTYPES)),
                                      shape=args.shape or (1,), batching=_BATCHING[args.batching or "both"],
                                      strategies=tuple(dict.fromkeys(args.strategy or STRATEGIES)),
                                      idle_us=args.idle_timeout_us or DEFAULT_IDLE_US)
        if backend == "native":  # the split ensemble's front step is a native backend too
            variants += split_variants(idle_us=args.idle_timeout_us)
    if args.only:
        variants = [v for v in variants if any(s in v.name for s in args.only)]
        if not variants:
            parser.error(f"no model name contains any of {args.only}")
    if any(v.backend == "tensorflow" for v in variants):
        print(_TF_NOTE, file=sys.stderr)
    try:
        for path in write_repository(variants, args.models_dir):
            print(path)
    except BackendUnavailable as exc:  # e.g. CUDA fails to start although a device is listed
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
