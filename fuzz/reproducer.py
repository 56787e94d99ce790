"""Renders a corpus entry's standalone reproducer: fuzz/reproducer_script.py with the entry's
JSON embedded, so that the script runs with only tritonclient and numpy installed."""
from __future__ import annotations

from pathlib import Path

TEMPLATE = Path(__file__).with_name("reproducer_script.py")
ENTRY_MARKER = "ENTRY = None  # @@ENTRY@@"
HEADER_MARKER = "# @@HEADER@@"


def render(entry) -> str:
    text = TEMPLATE.read_text(encoding="utf-8")
    if ENTRY_MARKER not in text or HEADER_MARKER not in text:
        raise RuntimeError(f"{TEMPLATE} lost its markers {ENTRY_MARKER!r} / {HEADER_MARKER!r}")
    # JSON escapes every quote inside strings, so it never contains three quotes in a row;
    # doubling the backslashes keeps its escapes intact inside a Python string literal.
    literal = entry.dumps().replace("\\", "\\\\")
    header = (f"# Reproducer of corpus entry {entry.name} ({entry.status}), written by triton-seqfuzz.\n"
              f"# Run: python {entry.name}.py --url HOST:GRPC_PORT")
    return (text.replace(HEADER_MARKER, header, 1)
                .replace(ENTRY_MARKER, f'ENTRY = json.loads("""\n{literal}""")', 1))
