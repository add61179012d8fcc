"""Serve a class on every core: one Streamlit process per core behind HAProxy, one address for the students.

    python scripts/serve.py                       # `make serve`: all cores, every network interface, port 8501
    python scripts/serve.py --workers 1           # one Streamlit process, no proxy
    ATLAS_WORKERS=3 python scripts/serve.py       # three processes

A Streamlit process runs Python on one core at a time, so a class on a 2-core machine left one core idle. Here
each core gets its own process (its own models, trace cache and sessions) on a private port of 127.0.0.1, and
HAProxy (deploy/haproxy.cfg) spreads the students over them: a new student goes to the least busy process and
stays there (a cookie), so the websocket and its session live in one process. A process that dies is started
again; meanwhile HAProxy's health check sends its students to a live one, where the page's address (every
control is in it) brings back their view. Without HAProxy the server runs as one process and says so.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEMPLATE = ROOT / "deploy" / "haproxy.cfg"
WORKERS_ENV = "ATLAS_WORKERS"  # how many Streamlit processes; default: one per core
FIRST_PORT = 8601  # the processes listen on 127.0.0.1:8601, 8602, …


def worker_count(text: str | None, cores: int | None) -> int:
    """ATLAS_WORKERS when it is a whole number ≥ 1, else one process per core (at least 1)."""
    if text is not None and text.strip().isdigit() and int(text) >= 1:
        return int(text)
    return max(1, cores or 1)


def worker_ports(count: int, students_port: int) -> list[int]:
    """The processes' ports: FIRST_PORT, FIRST_PORT + 1, …, passing over the port the students use."""
    return [p for p in range(FIRST_PORT, FIRST_PORT + count + 1) if p != students_port][:count]


def proxy_config(template: str, servers: list[str], bind: str) -> str:
    """deploy/haproxy.cfg with its `bind` line set to `bind` and one server line per address ("127.0.0.1:8601")."""
    lines = [line for line in template.splitlines() if not line.strip().startswith("server ")]
    lines = [f"    bind {bind}" if line.strip().startswith("bind ") else line for line in lines]
    lines += [f"    server atlas{k} {addr} check cookie atlas{k}" for k, addr in enumerate(servers, 1)]
    return "\n".join(lines) + "\n"


def streamlit_command(port: int, address: str) -> list[str]:
    """The command of one Streamlit process of the app (scripts/worker.py: `streamlit run app.py` that loads the
    default model as it starts), headless; .streamlit/config.toml gives the other settings."""
    options = ["--server.port", str(port), "--server.address", address, "--server.headless", "true"]
    return [sys.executable, str(ROOT / "scripts" / "worker.py"), *options]


def healthy(addr: str, timeout: float = 2.0) -> bool:
    try:
        with urllib.request.urlopen(f"http://{addr}/_stcore/health", timeout=timeout) as r:
            return r.status == 200
    except OSError:
        return False


class Class:
    """The worker processes and the proxy in front of them; `supervise` keeps every worker running."""

    def __init__(self, worker_ports: list[int], port: int, address: str, quiet: bool = False):
        self.addrs = [f"127.0.0.1:{p}" for p in worker_ports]
        self.bind = f"{address}:{port}"
        self.url = f"http://{'127.0.0.1' if address == '0.0.0.0' else address}:{port}"
        self.secret = secrets.token_hex(32)  # one cookie secret for every process: a cookie one signed, all accept
        self.out = subprocess.DEVNULL if quiet else None
        self.procs: list[subprocess.Popen] = []
        self.proxy: subprocess.Popen | None = None
        self.restarts = 0

    def start_worker(self, k: int) -> subprocess.Popen:
        port = int(self.addrs[k].rsplit(":", 1)[1])
        env = {
            **os.environ,
            "PYTHONUNBUFFERED": "1",
            "ATLAS_WORKER": str(k + 1),
            "STREAMLIT_SERVER_COOKIE_SECRET": self.secret,
            "ATLAS_BEHIND_PROXY": "1",  # on 127.0.0.1, reached through HAProxy only
        }
        return subprocess.Popen(
            streamlit_command(port, "127.0.0.1"), cwd=ROOT, env=env, stdout=self.out, stderr=self.out
        )

    def start(self, timeout: float = 90.0) -> None:
        self.procs = [self.start_worker(k) for k in range(len(self.addrs))]
        deadline = time.time() + timeout
        while not all(healthy(a) for a in self.addrs):
            if time.time() > deadline or any(p.poll() is not None for p in self.procs):
                self.stop()
                raise RuntimeError(
                    "a Streamlit process did not start (run it alone to see why: make serve ATLAS_WORKERS=1)"
                )
            time.sleep(0.3)
        cfg = Path(tempfile.mkdtemp(prefix="atlas-proxy-")) / "haproxy.cfg"
        cfg.write_text(proxy_config(TEMPLATE.read_text(), self.addrs, self.bind))
        self.proxy = subprocess.Popen(["haproxy", "-db", "-f", str(cfg)], stdout=self.out, stderr=self.out)
        deadline = time.time() + 30
        while not healthy(self.url.removeprefix("http://")):  # the students' address answers (a busy machine: ~1 s)
            if time.time() > deadline or self.proxy.poll() is not None:
                self.stop()
                raise RuntimeError(f"HAProxy did not start with {cfg} (is the port {self.bind} free?)")
            time.sleep(0.1)

    def check(self) -> None:
        """Start again every worker that has died (HAProxy's health check brings it back into use)."""
        for k, proc in enumerate(self.procs):
            if proc.poll() is not None:
                print(f"atlas: process {k + 1} ended ({proc.returncode}); starting it again", file=sys.stderr)
                self.procs[k] = self.start_worker(k)
                self.restarts += 1
        if self.proxy is not None and self.proxy.poll() is not None:
            raise RuntimeError(f"HAProxy ended ({self.proxy.returncode})")

    def supervise(self) -> None:
        while True:
            self.check()
            time.sleep(1.0)

    def stop(self) -> None:
        for proc in [*self.procs, *([self.proxy] if self.proxy else [])]:
            if proc.poll() is None:
                proc.terminate()
        for proc in [*self.procs, *([self.proxy] if self.proxy else [])]:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serving(workers: int, quiet: bool = True):
    """A class server on free ports of 127.0.0.1, for tests and benchmarks: yields the Class (its URL: `c.url`)."""
    c = Class([free_port() for _ in range(workers)], free_port(), "127.0.0.1", quiet)
    c.start()
    try:
        yield c
    finally:
        c.stop()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", type=int, help=f"Streamlit processes (default: ${WORKERS_ENV}, else one per core)")
    ap.add_argument("--port", type=int, default=8501, help="the students' port")
    ap.add_argument("--address", default="0.0.0.0", help="the address to listen on (0.0.0.0: every network interface)")
    args = ap.parse_args()
    workers = args.workers or worker_count(os.environ.get(WORKERS_ENV), os.cpu_count())
    if workers > 1 and shutil.which("haproxy") is None:
        print(
            "atlas: HAProxy is not installed (apt-get install haproxy), so one process serves the class",
            file=sys.stderr,
        )
        workers = 1
    if workers == 1:
        os.chdir(ROOT)
        os.execv(sys.executable, streamlit_command(args.port, args.address))
    c = Class(worker_ports(workers, args.port), args.port, args.address)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        c.start()
        where = "" if args.address == "127.0.0.1" else f"; students open http://<this machine's address>:{args.port}"
        print(f"atlas: {workers} processes serve http://localhost:{args.port}{where}", flush=True)
        c.supervise()
    except KeyboardInterrupt:
        pass
    finally:
        c.stop()


if __name__ == "__main__":
    main()
