"""Where Hypothesis keeps the failing examples it finds (`--fuzz-db`), to pool them across
machines or CI workers: a Redis server, or a shared directory.

    --fuzz-db redis://HOST:PORT/DB     hypothesis.extra.redis.RedisExampleDatabase (extra `redis`)
    --fuzz-db dir:/PATH                DirectoryBasedExampleDatabase (e.g. on NFS)

A worker that finds a failure saves it; every other worker replays it first (Hypothesis's reuse
phase). Note: the derandomized `ci` profile runs without a database, and Hypothesis does not use
one while derandomize is set; use the dev or long profile with a shared database.
"""
from __future__ import annotations

from urllib.parse import urlparse


class DatabaseSpecError(ValueError):
    pass


def open_database(spec: str):
    """The ExampleDatabase named by a --fuzz-db value."""
    if spec.startswith("dir:"):
        from hypothesis.database import DirectoryBasedExampleDatabase

        path = spec[len("dir:"):]
        if not path:
            raise DatabaseSpecError("--fuzz-db dir: needs a path, e.g. dir:/shared/hypothesis")
        return DirectoryBasedExampleDatabase(path)
    if spec.startswith("redis://"):
        try:
            import redis
            from hypothesis.extra.redis import RedisExampleDatabase
        except ImportError as err:
            raise DatabaseSpecError(f"--fuzz-db {spec} needs the redis package: pip install "
                                    f"'triton-seqfuzz[redis]' ({err})") from None
        url = urlparse(spec)
        try:
            db_number = int(url.path.lstrip("/") or 0)
        except ValueError:
            raise DatabaseSpecError(f"--fuzz-db {spec}: the path must be a database number") from None
        client = redis.Redis(host=url.hostname or "127.0.0.1", port=url.port or 6379, db=db_number)
        try:
            client.ping()
        except redis.RedisError as err:
            raise DatabaseSpecError(f"--fuzz-db {spec}: no Redis answers there: {err}") from None
        return RedisExampleDatabase(client, key_prefix=b"triton-seqfuzz:")
    raise DatabaseSpecError(f"--fuzz-db {spec!r}: expected redis://HOST:PORT/DB or dir:/PATH")
