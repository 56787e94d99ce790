"""Files the fuzzer writes whole: never seen half-written, even by a run stopped mid-write."""
from __future__ import annotations

import os
from pathlib import Path


def atomic_write(path: Path, text: str, mode: int | None = None) -> None:
    """Writes beside the target, then renames it into place (tmp + os.replace)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    if mode is not None:
        os.chmod(tmp, mode)
    os.replace(tmp, path)
