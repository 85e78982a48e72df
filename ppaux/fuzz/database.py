"""The example database a fuzz run saves its failures to: a directory, or a shared Redis."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase

from ppaux.fuzz.options import FuzzUsageError

__all__ = ["DEFAULT_DB", "DatabaseError", "open_database"]

DEFAULT_DB = ".hypothesis/fuzz-db"
# Connect and answer, each: a Redis that does not answer is told within 5 s, not after TCP's minutes.
REDIS_TIMEOUT_S = 2.0
# Inside a round a slow answer is a busy fleet database, not a failure of the test that was saving.
ROUND_REDIS_TIMEOUT_S = 60.0


class DatabaseError(FuzzUsageError):
    """The --db spec is unusable; the message is one line for the user."""


def _redis_client(spec: str, answer_timeout: float) -> Any:  # a redis.Redis: redis is imported for a redis:// --db only
    parts = urlsplit(spec)
    if parts.scheme != "redis" or not parts.hostname:
        raise DatabaseError(f"--db {spec!r}: expected redis://HOST:PORT")
    try:
        port = parts.port or 6379
    except ValueError:
        raise DatabaseError(f"--db {spec!r}: the port is not a number") from None
    try:
        import redis
    except ImportError:  # pragma: no cover - redis-py is in the test and fuzz extras
        raise DatabaseError("--db redis://... needs the `redis` Python package (pip install 'ppaux[fuzz]')") from None
    db = int(parts.path.strip("/") or 0) if parts.path.strip("/").isdigit() else 0
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    # No retries: a fleet machine whose Redis is down should say so at once, not after backoffs.
    return redis.Redis(
        host=parts.hostname,
        port=port,
        db=db,
        socket_connect_timeout=REDIS_TIMEOUT_S,
        socket_timeout=answer_timeout,
        retry=Retry(NoBackoff(), 0),
    )


def open_database(
    spec: str | None, *, must_exist: bool = False, answer_timeout: float = REDIS_TIMEOUT_S
) -> ExampleDatabase:
    """The database for ``spec``: a ``redis://HOST:PORT`` URL, else a directory (created when
    missing, unless ``must_exist``: a replay of a directory that is not there is a typo, not "0 saved").

    A Redis that does not answer is reported here, once, instead of in every test.
    """
    spec = spec or DEFAULT_DB
    if "://" in spec:
        client = _redis_client(spec, answer_timeout)
        try:
            client.ping()
        except Exception as exc:
            raise DatabaseError(f"--db {spec}: cannot reach Redis ({type(exc).__name__}: {exc})") from None
        from hypothesis.extra.redis import RedisExampleDatabase

        return RedisExampleDatabase(client)
    path = Path(spec)
    if path.exists() and not path.is_dir():
        raise DatabaseError(f"--db {spec!r} is a file; expected a directory or redis://HOST:PORT")
    if must_exist and not path.exists():
        raise DatabaseError(f"--db {spec!r}: no such directory; nothing saved there to replay")
    return DirectoryBasedExampleDatabase(path)
