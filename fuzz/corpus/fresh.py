"""Fresh copies of a model, loaded ahead, for shrinking a failure that needs a fresh model.

A try from a fresh model reloads it first, and a reload waits ~1.4 s for Triton to start a new
Python backend stub, while the load itself is mostly waiting: four loads side by side take about
as long as one (measured on 2 cores). So while one try replays on a fresh copy, the next copies
are already loading, under names of their own, from the model's own files (the repository API's
load with a config and files: nothing is written to the user's repository). A copy serves one
try and is unloaded.

A copy is the model under another name, so a failure found on one is a candidate only: the
caller confirms what it keeps on the model itself, after a real reload (fuzz/corpus/isolate.py).
"""
from __future__ import annotations

import itertools
import json
import os
from collections import deque
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import attrs

from ..spec import ModelSpec
from ..values import CONTROL_TIMEOUT_S, Kind

AHEAD = 3  # copies loading at once (Triton loads up to 4 models side by side by default)
_NAMES = itertools.count(1)


class FreshCopies:
    """Copies of one model, `AHEAD` of them loading at any time. `take` gives a loaded one's
    spec (the model's, renamed); `close` unloads them all."""

    def __init__(self, client, spec: ModelSpec, config: dict, files: dict):
        self.spec = spec
        self._client, self._config, self._files = client, config, files
        self._loader = ThreadPoolExecutor(AHEAD, thread_name_prefix="fresh-copy")
        self._loading: deque[tuple[str, Future]] = deque()
        self._loaded: list[str] = []
        for _ in range(AHEAD):
            self._load_one()

    @classmethod
    def of(cls, server, spec: ModelSpec) -> "FreshCopies | None":
        """Copies of `spec`'s model, or None when it cannot be copied: not a model of its own
        (an ensemble's copy would still send to the same stateful step), or its files are not in
        a local repository (a server this harness did not start)."""
        repository = getattr(server, "model_repository", None)
        root = Path(repository) / spec.name if repository is not None else None
        if spec.step or root is None or not (root / "config.pbtxt").is_file():
            return None
        client = server.client()
        try:
            config = client.get_model_config(spec.name, as_json=True, client_timeout=CONTROL_TIMEOUT_S)["config"]
        except Exception:  # noqa: BLE001 - no copies; the caller reloads instead
            return None
        return cls(client, spec, config, _files(root))

    def take(self) -> ModelSpec | None:
        """A fresh copy's spec, loaded and never sent to; None when it failed to load."""
        name, loading = self._loading.popleft()
        self._load_one()
        try:
            loading.result()
        except Exception:  # noqa: BLE001 - the caller reloads the model itself instead
            return None
        self._loaded.append(name)
        return attrs.evolve(self.spec, name=name)

    def done(self, copy: ModelSpec) -> None:
        """The try on `copy` is over: unload it (Triton retires it in the background)."""
        if copy.name in self._loaded:
            self._loaded.remove(copy.name)
            self._unload(copy.name)

    def close(self) -> None:
        """Waits for the copies still loading (a second or so) and unloads every copy."""
        self._loader.shutdown(wait=True)
        for name, loading in self._loading:
            if loading.exception() is None:
                self._loaded.append(name)
        self._loading.clear()
        for name in self._loaded:
            self._unload(name)
        self._loaded.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _load_one(self) -> None:
        name = f"{self.spec.name}__fresh{next(_NAMES)}"
        config = json.dumps({**self._config, "name": name})
        self._loading.append((name, self._loader.submit(self._client.load_model, name, config=config,
                                                        files=self._files)))

    def _unload(self, name: str) -> None:
        try:
            self._client.unload_model(name)
        except Exception:  # noqa: BLE001 - a server that is gone took its copies with it
            pass


def _files(root: Path) -> dict:
    """The model directory's files but its config, as the repository API takes them."""
    files = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in names:
            path = Path(folder) / name
            rel = path.relative_to(root).as_posix()
            if rel != "config.pbtxt":
                files[f"file:{rel}"] = path.read_bytes()
    return files


def renamed(steps, name: str) -> list:
    """The program with every request sent to model `name` (to a copy, or back to the model)."""
    return [attrs.evolve(s, request=attrs.evolve(s.request, model=name))
            if s.request is not None and s.request.model != name else s for s in steps]


def replayable_on_copy(steps) -> bool:
    """A program with no fault of its own: a copy cannot be reloaded or outlive a restart."""
    return not any(s.kind is Kind.FAULT for s in steps)
