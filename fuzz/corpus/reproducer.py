"""Renders a corpus entry's standalone reproducer: a short NAME.py that shows the program (each
step: who sent what, and what had to come back) and replays NAME.json, beside it, with the
shared runtime seqfuzz_replay.py (fuzz/corpus/reproducer_script.py and the step families' plays,
copied into the corpus folder).
Neither needs this project: only tritonclient and numpy."""
from __future__ import annotations

from pathlib import Path

from .. import steps

RUNTIME = Path(__file__).with_name("reproducer_script.py")
MARK = "# @@ the step families' plays @@\n"  # where they are copied into it
RUNTIME_NAME = "seqfuzz_replay.py"  # its name in a corpus folder
SHOWN_LINES = 110  # a longer program is shown up to here (the file stays under 150 lines); the JSON holds it all


def runtime() -> str:
    """reproducer_script.py, with the plays the step families registered (fuzz/steps.py) in it."""
    base = RUNTIME.read_text(encoding="utf-8")
    assert base.count(MARK) == 1, f"{RUNTIME.name} must hold the line {MARK!r} once"
    return base.replace(MARK, steps.spliced())


def _program_lines(entry) -> list[str]:
    lines = []
    for shown, step in enumerate(entry.steps):
        text = step.describe().split("\n")
        if len(lines) + len(text) > SHOWN_LINES:
            lines.append(f"... and {len(entry.steps) - shown} more steps (in {entry.name}.json)")
            break
        lines.extend(text)
    return [f"  {line}".rstrip() for line in lines]


def render(entry) -> str:
    divergence = f" on Triton {', '.join(entry.divergence_versions)}" if entry.divergence_versions else ""
    doc = [
        f"Reproducer of triton-seqfuzz corpus entry {entry.name}",
        "",
        f"Status: {entry.status}{divergence}. Recorded on Triton {entry.triton_version}: [{entry.invariant}] "
        f"{entry.detail}.",
        f"Model: {entry.spec.describe()}",
        "",
        "The program (what each client sent, what the reference model required, what came back):",
        "",
        *_program_lines(entry),
        "",
        f"Run: python {entry.name}.py --url HOST:GRPC_PORT [--http-url HOST:HTTP_PORT] [--model NAME]",
        f"It replays {entry.name}.json with {RUNTIME_NAME}, both beside it (tritonclient and numpy only);",
        "exit 1: a step diverged, 0: none did, 2: no Triton at --url.",
    ]
    body = "\n".join(doc).replace("\\", "\\\\").replace('"""', '\\"\\"\\"')
    return (
        "#!/usr/bin/env python3\n"
        f'"""{body}\n"""\n'
        "import json\n"
        "import sys\n"
        "from pathlib import Path\n\n"
        "HERE = Path(__file__).resolve().parent\n"
        f'ENTRY = json.loads((HERE / "{entry.name}.json").read_text(encoding="utf-8"))\n\n'
        'if __name__ == "__main__":\n'
        "    sys.path.insert(0, str(HERE))\n"
        f"    from {RUNTIME_NAME.removesuffix('.py')} import main\n\n"
        "    sys.exit(main(ENTRY))\n")
