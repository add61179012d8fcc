"""The ClassStore protocol, the same on both backends (tests/live/conftest.py: `store` is each of them)."""

from __future__ import annotations

import queue
import time

from scripts.serve import free_port
from tests.live.conftest import subscribers, wait_for
from ui.live.redis_store import RedisStore, own_server
from ui.live.store import MemoryStore


def test_a_record_is_made_once_and_each_write_increments_its_version(store):
    assert store.create("AAAA1111", {"view": "v0", "qid": "0"}, ttl=60)
    assert not store.create("AAAA1111", {"view": "other"}, ttl=60)  # taken: the record keeps its fields
    assert store.read("AAAA1111") == {"view": "v0", "qid": "0", "version": "0"}
    assert [store.write("AAAA1111", {"view": f"v{k}"}) for k in (1, 2, 3)] == [1, 2, 3]
    assert store.read("AAAA1111")["view"] == "v3"
    assert store.write("BBBB2222", {"view": "x"}) == 0  # no such class: nothing made
    assert store.read("BBBB2222") == {}


def test_tables_belong_to_a_living_class(store):
    assert not store.put("AAAA1111", "answers", "1:s", "yes")  # before the class exists
    store.create("AAAA1111", {}, ttl=60)
    assert store.put("AAAA1111", "answers", "1:s", "yes")
    assert store.put("AAAA1111", "answers", "1:s", "no")  # replaces
    assert store.put("AAAA1111", "answers", "1:t", "yes")
    assert store.table("AAAA1111", "answers") == {"1:s": "no", "1:t": "yes"}
    assert store.table("AAAA1111", "questions") == {}
    assert store.table("CCCC3333", "answers") == {}


def test_a_member_is_in_one_group_and_counts_while_its_beat_is_recent(store):
    store.create("AAAA1111", {}, ttl=60)
    store.beat("AAAA1111", "follow", "s1", 100.0)
    store.beat("AAAA1111", "follow", "s2", 105.0)
    store.beat("AAAA1111", "explore", "s3", 105.0)
    assert (store.count("AAAA1111", "follow", 99.0), store.count("AAAA1111", "explore", 99.0)) == (2, 1)
    assert store.count("AAAA1111", "follow", 101.0) == 1  # s1's beat is older
    store.beat("AAAA1111", "explore", "s2", 106.0)  # s2 leaves to explore
    assert (store.count("AAAA1111", "follow", 0.0), store.count("AAAA1111", "explore", 0.0)) == (1, 2)


def test_delete_removes_the_record_its_tables_and_beats(store):
    store.create("AAAA1111", {"view": "v"}, ttl=60)
    store.put("AAAA1111", "questions", "1", "q")
    store.beat("AAAA1111", "follow", "s1", 1.0)
    store.delete("AAAA1111")
    assert store.read("AAAA1111") == {}
    assert store.table("AAAA1111", "questions") == {}
    assert store.count("AAAA1111", "follow", 0.0) == 0
    assert store.create("AAAA1111", {}, ttl=60)  # the code is free again, and the new class starts empty
    assert store.table("AAAA1111", "questions") == {}


def test_every_key_of_a_class_expires_together_unless_touched(store):
    store.create("AAAA1111", {"view": "v"}, ttl=0.4)
    store.create("BBBB2222", {"view": "v"}, ttl=0.4)
    for code in ("AAAA1111", "BBBB2222"):
        store.put(code, "answers", "1:s", "yes")
        store.beat(code, "follow", "s", 1.0)
    store.touch("BBBB2222", 30)
    time.sleep(0.6)
    assert store.read("AAAA1111") == {} and store.table("AAAA1111", "answers") == {}
    assert store.count("AAAA1111", "follow", 0.0) == 0
    assert store.read("BBBB2222")["view"] == "v" and store.table("BBBB2222", "answers") == {"1:s": "yes"}
    assert store.count("BBBB2222", "follow", 0.0) == 1


def test_a_counter_counts_within_its_window_then_starts_again(store):
    assert [store.hit("k", 0.4) for _ in range(3)] == [1, 2, 3]
    assert store.hit("k", 0.4, 0) == 3  # a read adds nothing
    assert store.hit("other", 0.4, 0) == 0
    time.sleep(0.6)
    assert store.hit("k", 0.4, 0) == 0 and store.hit("k", 0.4) == 1


def test_the_memory_store_expires_on_its_clock():
    now = [1000.0]
    store = MemoryStore(clock=lambda: now[0])
    store.create("AAAA1111", {}, ttl=3 * 3600)
    now[0] += 3 * 3600 - 1
    assert store.read("AAAA1111")
    store.touch("AAAA1111", 3 * 3600)
    now[0] += 3 * 3600 - 1
    assert store.read("AAAA1111")
    now[0] += 2
    assert store.read("AAAA1111") == {}


def test_news_of_a_changed_class_reaches_every_listener(store, news):
    store.notify("AAAA1111")
    store.notify("BBBB2222")
    assert [news.get(timeout=5), news.get(timeout=5)] == ["AAAA1111", "BBBB2222"]


def test_a_listener_hears_the_news_again_after_redis_restarts():
    """The subscriber thread subscribes again once Redis is back (news sent while it was down is lost: the pages' own
    polls catch up)."""
    port = free_port()
    heard: queue.Queue = queue.Queue()
    with own_server(port) as url:
        store = RedisStore(url)
        store.listen(heard.put)
        wait_for(lambda: subscribers(store) == 1, "the listener did not subscribe")
    with own_server(port):  # a new server: nobody subscribed to it yet
        wait_for(lambda: subscribers(store) == 1, "the listener did not subscribe again", seconds=15)
        store.notify("CCCC3333")
        assert heard.get(timeout=5) == "CCCC3333"
