"""python -m modelgen --models-dir DIR: write the accumulator model repository."""
from __future__ import annotations

import argparse
import sys

from .repository import write_repository
from .variants import DEFAULT_IDLE_US, python_variants


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m modelgen", description=__doc__)
    parser.add_argument("--models-dir", "--models_dir", dest="models_dir", required=True,
                        help="repository folder to write (created if missing)")
    parser.add_argument("--backend", default="python", choices=["python"],
                        help="backend of the generated models")
    parser.add_argument("--idle-timeout-us", type=int, default=DEFAULT_IDLE_US,
                        help=f"max_sequence_idle_microseconds (default {DEFAULT_IDLE_US})")
    parser.add_argument("--only", action="append", default=[], metavar="SUBSTRING",
                        help="write only models whose name contains SUBSTRING (repeatable)")
    args = parser.parse_args(argv)
    if args.idle_timeout_us <= 0:
        parser.error(f"--idle-timeout-us must be positive, got {args.idle_timeout_us}")

    variants = python_variants(idle_us=args.idle_timeout_us)
    if args.only:
        variants = [v for v in variants if any(s in v.name for s in args.only)]
        if not variants:
            parser.error(f"no model name contains any of {args.only}")
    for path in write_repository(variants, args.models_dir):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
