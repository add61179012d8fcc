"""The ClassStore of ui/live/store.py in Redis, shared by every app process (`ATLAS_REDIS_URL=redis://host:6379/0`).

Keys of class CODE: `live:CODE` (hash: the record, with its version), `live:CODE:t:NAME` (hash: a table),
`live:CODE:b:GROUP` (sorted set: member → time of its last heartbeat). Every key of a class gets the record's
expiry, so the class goes whole. Rate counters: `live:n:KEY` (a string with its own expiry). The steps that must see
the record and change something at once are Lua scripts, which Redis runs atomically. A changed class is published on
the channel `live:changed` (its code); each process that listens keeps one subscriber thread, which subscribes again
after Redis comes back (news sent meanwhile is lost: the pages' own polls catch up).
"""

from __future__ import annotations

import contextlib
import functools
import logging
import shutil
import subprocess
import threading
import time
from collections.abc import Callable

import redis

from .classroom import StoreDown
from .store import GROUPS, TABLES, ClassStore

PREFIX = "live:"
CHANGED = PREFIX + "changed"  # the channel of changed classes' codes
RESUBSCRIBE_S = 1.0  # the subscriber waits this long before it tries a Redis that went away again
_LOG = logging.getLogger(__name__)
# KEYS[1] the record; ARGV[1] its expiry in ms, then field, value, …: make it, with version 0, if it does not exist
CREATE = """
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'version', '0', unpack(ARGV, 2))
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
"""
# KEYS[1] the record; ARGV field, value, field, value…: set them and increment the version, if the record exists
WRITE = """
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if #ARGV > 0 then redis.call('HSET', KEYS[1], unpack(ARGV)) end
return redis.call('HINCRBY', KEYS[1], 'version', 1)
"""
# KEYS[1] the record, KEYS[2] the table; ARGV name, value: set it, with the record's expiry, if the record exists
PUT = """
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ttl)
return 1
"""
# KEYS[1] the record, KEYS[2] the group's set, KEYS[3…] the other groups' sets; ARGV member, time
BEAT = """
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then return 0 end
for i = 3, #KEYS do redis.call('ZREM', KEYS[i], ARGV[1]) end
redis.call('ZADD', KEYS[2], ARGV[2], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ttl)
return 1
"""


def _answering(method):
    """`method`, with Redis's connection errors as StoreDown (the page says so and carries on)."""

    @functools.wraps(method)
    def call(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except (redis.ConnectionError, redis.TimeoutError) as err:
            raise StoreDown("The class server does not answer; the class goes on when it is back.") from err

    return call


class RedisStore:
    """Classes in Redis (a client is thread-safe: one per process serves every session)."""

    def __init__(self, url: str):
        self.url = url
        self.r = redis.Redis.from_url(url, decode_responses=True, socket_timeout=5, health_check_interval=30)
        self._create, self._write, self._put, self._beat = (
            self.r.register_script(s) for s in (CREATE, WRITE, PUT, BEAT)
        )
        self._listeners: list[Callable[[str], None]] = []
        self._subscriber: threading.Thread | None = None

    @staticmethod
    def _key(code: str, *parts: str) -> str:
        return ":".join((PREFIX + code, *parts))

    def _keys(self, code: str) -> list[str]:
        """Every key of the class: the record, its tables and its heartbeat sets."""
        return [
            self._key(code),
            *(self._key(code, "t", t) for t in TABLES),
            *(self._key(code, "b", g) for g in GROUPS),
        ]

    def create(self, code: str, fields: dict[str, str], ttl: float) -> bool:
        args = [int(ttl * 1000), *(x for kv in fields.items() for x in kv)]
        return bool(self._create(keys=[self._key(code)], args=args))

    def read(self, code: str) -> dict[str, str]:
        return self.r.hgetall(self._key(code))

    def write(self, code: str, fields: dict[str, str]) -> int:
        return int(self._write(keys=[self._key(code)], args=[x for kv in fields.items() for x in kv]))

    def touch(self, code: str, ttl: float) -> None:
        with self.r.pipeline() as p:
            for key in self._keys(code):
                p.pexpire(key, int(ttl * 1000))
            p.execute()

    def delete(self, code: str) -> None:
        self.r.delete(*self._keys(code))

    def put(self, code: str, table: str, name: str, value: str) -> bool:
        assert table in TABLES, table
        return bool(self._put(keys=[self._key(code), self._key(code, "t", table)], args=[name, value]))

    def table(self, code: str, table: str) -> dict[str, str]:
        return self.r.hgetall(self._key(code, "t", table))

    def beat(self, code: str, group: str, member: str, at: float) -> None:
        others = [self._key(code, "b", g) for g in GROUPS if g != group]
        self._beat(keys=[self._key(code), self._key(code, "b", group), *others], args=[member, repr(at)])

    def count(self, code: str, group: str, since: float) -> int:
        return int(self.r.zcount(self._key(code, "b", group), since, "+inf"))

    def hit(self, key: str, window: float, n: int = 1) -> int:
        key = PREFIX + "n:" + key
        if not n:
            return int(self.r.get(key) or 0)
        with self.r.pipeline() as p:
            p.incrby(key, n)
            p.pexpire(key, int(window * 1000), nx=True)  # the window starts with its first hit
            total, _ = p.execute()
        return int(total)

    def notify(self, code: str) -> None:
        self.r.publish(CHANGED, code)

    def listen(self, callback: Callable[[str], None]) -> None:
        self._listeners.append(callback)
        if self._subscriber is None:
            self._subscriber = threading.Thread(target=self._subscribe, name="live-class-news", daemon=True)
            self._subscriber.start()

    def _subscribe(self) -> None:
        """The subscriber thread: every code published on CHANGED to every listener, for as long as the process
        lives. Its own connection waits without a timeout (the class may stay quiet for minutes)."""
        client = redis.Redis.from_url(self.url, decode_responses=True, socket_keepalive=True)
        while True:
            try:
                with client.pubsub(ignore_subscribe_messages=True) as news:
                    news.subscribe(CHANGED)
                    for message in news.listen():
                        for callback in list(self._listeners):
                            callback(message["data"])
            except (redis.ConnectionError, redis.TimeoutError):
                time.sleep(RESUBSCRIBE_S)
            except Exception:  # a listener's bug must not end the news for the whole process
                _LOG.exception("live class: a listener failed")


for _name in [n for n in vars(ClassStore) if not n.startswith("_")]:
    setattr(RedisStore, _name, _answering(getattr(RedisStore, _name)))


@contextlib.contextmanager
def own_server(port: int):
    """A redis-server of one's own on 127.0.0.1:port, without persistence, for the tests and the load bench (Debian's
    `redis-server`, which `make test` installs); yields its URL, and stops it after."""
    program = shutil.which("redis-server") or "/usr/bin/redis-server"
    options = ["--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
    proc = subprocess.Popen([program, *options], stdout=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    client = redis.Redis.from_url(url)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError(f"redis-server did not start on port {port}") from None
                time.sleep(0.05)
        yield url
    finally:
        proc.terminate()
        proc.wait(10)
