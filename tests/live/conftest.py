"""The stores the live-class tests run on: in memory, and Redis (a redis-server of the tests' own on a free port,
without persistence, stopped after the session)."""

from __future__ import annotations

import queue
import time

import pytest
import redis

from scripts.serve import free_port
from ui.live.redis_store import CHANGED, RedisStore, own_server
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


def subscribers(store: RedisStore) -> int:
    """How many clients of the store's Redis listen for news of changed classes."""
    return dict(store.r.pubsub_numsub(CHANGED)).get(CHANGED, 0)


def wait_for(condition, what: str, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


@pytest.fixture
def news(store) -> queue.Queue:
    """The codes of the classes the store announces as changed, as a listener hears them: on Redis, a listener of
    another client of the same server (as another app process would be), subscribed before the test goes on."""
    heard: queue.Queue = queue.Queue()
    if isinstance(store, MemoryStore):
        store.listen(heard.put)
        return heard
    RedisStore(store.url).listen(heard.put)
    # Subscribed once it hears a probe: a count of the server's subscribers also grows when the test's Classroom
    # (which listens from its own thread) subscribes. Redis delivers one publisher's messages in order, so once "end"
    # is heard no probe is left to come.
    deadline = time.monotonic() + 10
    while True:
        store.notify("probe")
        try:
            if heard.get(timeout=0.1) == "probe":
                break
        except queue.Empty:
            assert time.monotonic() < deadline, "the listener did not subscribe"
    store.notify("end")
    while heard.get(timeout=10) != "end":
        pass
    return heard
