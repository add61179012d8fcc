"""The stores the live-class tests run on: in memory, and Redis (a redis-server of the tests' own on a free port,
without persistence, stopped after the session)."""

from __future__ import annotations

import shutil
import subprocess
import time

import pytest
import redis

from scripts.serve import free_port
from ui.live.redis_store import RedisStore
from ui.live.store import MemoryStore

REDIS_SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


@pytest.fixture(scope="session")
def redis_url():
    """A redis-server for the tests (Debian's `redis-server`, which `make test` installs)."""
    port = free_port()
    proc = subprocess.Popen(
        [REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
        stdout=subprocess.DEVNULL,
    )
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)
    deadline = time.time() + 10
    while True:
        try:
            client.ping()
            break
        except redis.ConnectionError:
            assert time.time() < deadline and proc.poll() is None, "redis-server did not start"
            time.sleep(0.05)
    yield url
    proc.terminate()
    proc.wait(10)


@pytest.fixture(params=["memory", "redis"])
def store(request):
    """Each backend, empty."""
    if request.param == "memory":
        return MemoryStore()
    url = request.getfixturevalue("redis_url")
    redis.Redis.from_url(url).flushdb()
    return RedisStore(url)
