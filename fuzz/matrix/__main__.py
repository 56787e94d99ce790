"""`python -m fuzz.matrix`: runs the release matrix's command line (fuzz/matrix/cli.py)."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
