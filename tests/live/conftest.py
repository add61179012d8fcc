"""The stores the live-class tests run on: in memory, and Redis (a redis-server of the tests' own on a free port,
without persistence, stopped after the session)."""

from __future__ import annotations

import pytest
import redis

from scripts.serve import free_port
from ui.live.redis_store import RedisStore, own_server
from ui.live.store import MemoryStore


@pytest.fixture(scope="session")
def redis_url():
    """A redis-server of the tests' own."""
    with own_server(free_port()) as url:
        yield url


@pytest.fixture(params=["memory", "redis"])
def store(request):
    """Each backend, empty."""
    if request.param == "memory":
        return MemoryStore()
    url = request.getfixturevalue("redis_url")
    redis.Redis.from_url(url).flushdb()
    return RedisStore(url)
