"""`make serve`: one Streamlit process per core behind HAProxy (scripts/serve.py), one address for the students."""

from __future__ import annotations

import time
import urllib.request
from http.cookiejar import CookieJar
from pathlib import Path

from scripts.serve import FIRST_PORT, TEMPLATE, proxy_config, serving, worker_count, worker_ports


def test_one_process_per_core_unless_told():
    assert worker_count(None, 2) == 2 and worker_count(None, None) == 1 and worker_count(None, 0) == 1
    assert worker_count("3", 2) == 3
    assert [worker_count(bad, 4) for bad in ("0", "-1", "two", "")] == [4, 4, 4, 4]  # a bad setting: one per core


def test_the_processes_ports_leave_the_students_port_free():
    """`scripts/serve.py --port 8601`: the students' port is not also given to a process (HAProxy could not bind)."""
    assert worker_ports(2, 8501) == [FIRST_PORT, FIRST_PORT + 1]
    assert worker_ports(2, FIRST_PORT) == [FIRST_PORT + 1, FIRST_PORT + 2]
    assert worker_ports(3, FIRST_PORT + 1) == [FIRST_PORT, FIRST_PORT + 2, FIRST_PORT + 3]


def test_the_proxy_config_is_the_shipped_one_with_this_machines_processes():
    cfg = proxy_config(TEMPLATE.read_text(), ["127.0.0.1:8601", "127.0.0.1:8602"], "0.0.0.0:8501")
    lines = [line.split("#")[0].strip() for line in cfg.splitlines()]  # without comments
    assert [line for line in lines if line.startswith("bind ")] == ["bind 0.0.0.0:8501"]
    servers = [line for line in lines if line.startswith("server ")]
    assert servers == [
        "server atlas1 127.0.0.1:8601 check cookie atlas1",
        "server atlas2 127.0.0.1:8602 check cookie atlas2",
    ]
    for kept in (
        "option redispatch",
        "balance leastconn",
        "cookie ATLAS_REPLICA insert indirect nocache",
        "option httpchk GET /_stcore/health",
        "option forwardfor",  # the students' own addresses reach the app (ui/live/classroom.client_address)
    ):
        assert kept in lines


def student():
    """A browser's cookies: HAProxy's affinity cookie names the process that serves it."""
    jar = CookieJar()
    return urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar)), jar


def replica(url: str, browser) -> str:
    """Open the app's page; the process that answered it."""
    opener, jar = browser
    with opener.open(url + "/") as r:
        assert r.status == 200
    return next(c.value for c in jar if c.name == "ATLAS_REPLICA")


def test_students_spread_over_the_processes_and_a_dead_one_is_replaced():
    with serving(2) as c:
        for proc in c.procs:  # reached through HAProxy only: the app reads the address HAProxy forwards
            assert b"\0ATLAS_BEHIND_PROXY=1\0" in b"\0" + Path(f"/proc/{proc.pid}/environ").read_bytes()
        students = [student() for _ in range(4)]
        first = [replica(c.url, s) for s in students]
        assert sorted(set(first)) == ["atlas1", "atlas2"]  # leastconn spreads new students
        assert [replica(c.url, s) for s in students] == first  # each stays with its process (the cookie)
        c.procs[0].kill()
        deadline = time.time() + 20
        while c.restarts == 0 and time.time() < deadline:
            c.check()
            time.sleep(0.2)
        assert c.restarts == 1 and c.procs[0].poll() is None  # started again
        # every student is served meanwhile, those of the dead process by the live one (redispatch)
        assert all(replica(c.url, s) in ("atlas1", "atlas2") for s in students)


def test_a_process_loads_the_default_model_and_traces_the_presets_as_it_starts():
    """scripts/worker.py: the traces a class opens first are in the shared cache before any student asks."""
    import numpy as np

    from scripts import worker
    from transformer import run_trace
    from ui.models import TRACES, TraceKey, get_model
    from ui.state import PRESETS

    worker.preload()
    name = worker.default_model(worker.real_models() + worker.bundled_models())
    assert name == "shakespeare-gpt"  # tests open the bundled model (tests/conftest.py)
    lm = get_model(name)
    for sentence in PRESETS.values():
        tr = TRACES.get(TraceKey(name, sentence), lambda: None)
        assert tr is not None and tr.forward.done == lm.cfg.n_layer + 1, sentence  # every block has run
    fresh = run_trace(lm.model, lm.tokenizer, sentence)
    np.testing.assert_array_equal(
        tr[f"blocks.{lm.cfg.n_layer - 1}.attn.hook_pattern"], fresh[f"blocks.{lm.cfg.n_layer - 1}.attn.hook_pattern"]
    )
