"""A minimal Streamlit client that speaks the browser's websocket protocol (no browser).

Handshake, as the frontend does it (streamlit 1.67, Starlette server):
  1. GET /_stcore/health and /_stcore/host-config; the server sets the `_streamlit_xsrf` cookie.
  2. Open ws://host/_stcore/stream with `Sec-WebSocket-Protocol: streamlit, <xsrf cookie value>`
     (a reconnect adds the old session id as a third entry), the cookie, and a same-origin `Origin`.
  3. Send BackMsg{rerun_script: ClientState}: the first one names the page by `page_name` (the URL
     path, e.g. "One_head") with an empty `page_script_hash`; later ones carry the page's hash from
     the Navigation message, the query string from the last PageInfo, the state of every widget drawn
     by the last run, and the hashes of cached messages (large elements the server then sends as `ref_hash`;
     the app's own config turns that off: .streamlit/config.toml).
  4. Read ForwardMsgs until `script_finished`.
The server accepts the socket without the XSRF token too (it only guards the auth cookies); this
client sends it anyway, as the browser does.
"""

from __future__ import annotations

import asyncio
import http.cookiejar
import json
import time
import urllib.request
from dataclasses import dataclass, field

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ClientState_pb2 import ContextInfo
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.proto.Slider_pb2 import Slider
from streamlit.proto.WidgetStates_pb2 import WidgetState
from websockets.asyncio.client import connect
from websockets.exceptions import ConnectionClosed

from ui import widths

XSRF_COOKIE = "_streamlit_xsrf"
FINISHED = {v: k for k, v in ForwardMsg.ScriptFinishedStatus.items()}  # number -> name
DONE = {"FINISHED_SUCCESSFULLY", "FINISHED_FRAGMENT_RUN_SUCCESSFULLY"}  # a whole run's end, or a fragment's


def fetch_cookies(base: str) -> dict[str, str]:
    """What the browser does before opening the socket: health + host-config, keeping the cookies set on the way
    (the XSRF cookie; behind deploy/haproxy.cfg also the replica cookie, so the socket reaches the same process)."""
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    for path in ("/_stcore/health", "/_stcore/host-config"):
        with opener.open(base + path, timeout=30):
            pass
    return {c.name: c.value for c in jar}


def widget_value(kind: str, el) -> WidgetState | None:
    """The value a widget element shows (its value when the server set it, else its default),
    encoded as the frontend reports it."""
    ws = WidgetState(id=el.id)
    set_value = getattr(el, "set_value", False)
    if kind == "slider" and el.type == Slider.SELECT_SLIDER:  # option labels
        ws.string_array_value.data.extend(el.raw_value if set_value else [el.options[int(i)] for i in el.default])
    elif kind == "slider":
        ws.double_array_value.data.extend(el.value if set_value else el.default)
    elif kind == "multiselect":
        ws.string_array_value.data.extend(el.raw_values if set_value else [el.options[i] for i in el.default])
    elif kind in ("selectbox", "radio"):
        if set_value:
            ws.string_value = el.raw_value
        elif el.HasField("default") and 0 <= el.default < len(el.options):
            ws.string_value = el.options[el.default]
        else:
            return None
    elif kind in ("text_area", "text_input"):
        ws.string_value = el.value if set_value else el.default
    elif kind == "checkbox":
        ws.bool_value = el.value if set_value else el.default
    elif kind == "number_input" and (set_value or el.HasField("default")):
        ws.double_value = el.value if set_value else el.default
    else:
        return None  # buttons, data editors, empty widgets: the server uses their defaults
    return ws


@dataclass
class Run:
    """What one script run sent back."""

    latency: float = 0.0  # s, rerun sent -> script_finished
    first_msg: float = 0.0  # s, rerun sent -> new_session, the run's first message (sent when the script starts)
    nbytes: int = 0  # payload bytes of every ForwardMsg of this run
    status: str = ""  # a ScriptFinishedStatus name, or TIMEOUT / DISCONNECTED / CLIENT_ERROR …
    exceptions: list[str] = field(default_factory=list)  # Exception elements (their message), page not found
    # plotly chart id -> spec JSON (ref_hash resolved); only with keep_content
    charts: dict[str, str] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status in DONE and not self.exceptions


class Session:
    """One browser tab: a websocket session on one page, its widget states and its message cache."""

    def __init__(self, base: str, page_name: str = "", keep_content: bool = False, screen: float | None = None):
        self.base, self.page_name, self.keep_content = base, page_name, keep_content
        # the width of the browser window: once the page has drawn its width report component (ui/widths.py), its
        # report of that width goes with every request, as a browser's does (no chart widths: no browser draws here)
        self.screen = screen
        self.page_script_hash = ""
        self.query_string = ""
        self.session_id = ""
        self.widgets: dict[str, WidgetState] = {}  # id -> current value
        self.elements: dict[str, object] = {}  # id -> widget element proto (last run)
        # id of a lazy tab container (a widget: the open tab's label) -> its labels
        self.tabs: dict[str, list[str]] = {}
        # delta path of a lazy tab container (this run) -> (its id, the open tab)
        self._tab_paths: dict[tuple[int, ...], tuple[str, int]] = {}
        self.cache: dict[str, tuple[ForwardMsg, int]] = {}  # hash -> (msg, runs since last use)
        self.max_cache_age = 2
        self.ws = None
        self._run: Run | None = None
        self._done: asyncio.Future | None = None
        self._sent_at = 0.0
        self._seen: set[str] = set()
        self._reader: asyncio.Task | None = None
        self._current_fragment = ""
        self._run_fragment = ""
        self.widget_fragment: dict[str, str] = {}  # widget id -> the fragment it was drawn in ("": none)
        self.fragments: set[str] = set()  # the ids of the fragments that rerun on a timer (st.fragment(run_every=…))

    async def open(self) -> None:
        loop = asyncio.get_running_loop()
        cookies = await loop.run_in_executor(None, fetch_cookies, self.base)
        xsrf = cookies.get(XSRF_COOKIE, "")
        url = "ws" + self.base.removeprefix("http") + "/_stcore/stream"
        protocols = ["streamlit", xsrf or "PLACEHOLDER_AUTH_TOKEN"] + ([self.session_id] if self.session_id else [])
        self.ws = await connect(
            url,
            subprotocols=protocols,
            origin=self.base,
            additional_headers={"Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items())} if cookies else None,
            compression=None,  # the server has websocket compression off by default
            max_size=None,
            ping_interval=None,  # browsers answer pings but send none
            open_timeout=60,
        )
        self._reader = asyncio.create_task(self._read())

    async def close(self) -> None:
        if self._reader:
            self._reader.cancel()
        if self.ws is not None:
            await self.ws.close()

    def widget_id(self, user_key: str) -> str:
        """The element id of the widget with this user key (ids end with "-<key>")."""
        for wid in self.widgets:
            if wid.endswith("-" + user_key):
                return wid
        raise KeyError(f"no widget with key {user_key!r} on this page (have {sorted(self.widgets)})")

    def element(self, user_key: str):
        return self.elements[self.widget_id(user_key)]

    async def press(self, user_key: str, timeout: float = 60.0) -> Run:
        """Click the button with this user key: one rerun whose widget states carry
        its trigger, as a browser sends it."""
        wid = next((w for w in self.elements if w.endswith("-" + user_key)), None)
        if wid is None:
            raise KeyError(f"no button with key {user_key!r} on this page")
        self.widgets[wid] = WidgetState(id=wid, trigger_value=True)
        try:
            return await self.rerun(timeout=timeout, moved=[wid])
        finally:
            self.widgets.pop(wid, None)  # a trigger is sent once

    async def rerun(
        self, changes: dict[str, object] | None = None, timeout: float = 60.0, fragment: str = "", moved=()
    ) -> Run:
        """Set widgets by user key (slider: float, selectbox/text: str, checkbox: bool), rerun, wait for
        script_finished. As a browser does, a move of widgets drawn in one fragment reruns that fragment alone (`moved`:
        widget ids moved besides `changes`); `fragment`, an id from self.fragments: rerun it as its run_every timer
        does."""
        moved = [*moved, *(self.widget_id(k) for k in changes or {})]
        for key, value in (changes or {}).items():
            ws = self.widgets[self.widget_id(key)]
            if ws.WhichOneof("value") == "double_array_value":
                del ws.double_array_value.data[:]
                ws.double_array_value.data.append(float(value))
            else:
                setattr(ws, ws.WhichOneof("value"), value)
        msg = BackMsg()
        state = msg.rerun_script
        state.query_string = self.query_string
        state.page_script_hash = self.page_script_hash
        state.page_name = "" if self.page_script_hash else self.page_name
        owners = {self.widget_fragment.get(wid, "") for wid in moved}
        state.fragment_id = fragment or (owners.pop() if len(owners) == 1 else "")
        state.is_auto_rerun = bool(fragment)
        self._run_fragment = state.fragment_id
        state.widget_states.widgets.extend(self.widgets.values())
        state.cached_message_hashes.extend(self.cache)
        state.context_info.CopyFrom(
            ContextInfo(
                timezone="UTC",
                timezone_offset=0,
                locale="en-US",
                url=f"{self.base}/{self.page_name}",
                is_embedded=False,
                color_scheme="light",
            )
        )

        self._run, self._seen, self._tab_paths = Run(), set(), {}
        self._done = asyncio.get_running_loop().create_future()
        self._sent_at = time.perf_counter()
        await self.ws.send(msg.SerializeToString())
        try:
            await asyncio.wait_for(asyncio.shield(self._done), timeout)
        except TimeoutError:
            self._run.status = "TIMEOUT"
        run, self._run = self._run, None
        return run

    async def _read(self) -> None:
        status = "DISCONNECTED"
        try:
            async for data in self.ws:
                self._handle(data)
        except ConnectionClosed:
            pass
        except Exception as err:  # a bug of this client, not of the server: say so
            status = f"CLIENT_ERROR {err!r}"
        if self._run is not None and self._done is not None and not self._done.done():
            self._run.status = status
            self._done.set_result(None)

    def _handle(self, data: bytes) -> None:
        msg = ForwardMsg()
        msg.ParseFromString(data)
        run = self._run
        if run is not None:
            run.nbytes += len(data)
        kind = msg.WhichOneof("type")
        if kind == "ref_hash":
            cached = self.cache.get(msg.ref_hash)
            if cached is None:
                if run is not None:
                    run.exceptions.append(f"unknown ref_hash {msg.ref_hash}")
                return
            self.cache[msg.ref_hash] = (cached[0], 0)
            msg = cached[0]
            kind = msg.WhichOneof("type")
        elif msg.metadata.cacheable:
            self.cache[msg.hash] = (msg, 0)
        if kind == "new_session":
            ns = msg.new_session
            self.session_id = ns.initialize.session_id or self.session_id
            self.max_cache_age = ns.config.max_cached_message_age or self.max_cache_age
            if run is not None and run.status == FINISHED[ForwardMsg.FINISHED_EARLY_FOR_RERUN]:
                # the run that follows one finished early: what it draws replaces the early run's
                self._seen, self._tab_paths, run.charts = set(), {}, {}
            elif run is not None:
                run.first_msg = time.perf_counter() - self._sent_at
        elif kind == "navigation":  # the page that actually ran (NewSession names the main script)
            self.page_script_hash = msg.navigation.page_script_hash or self.page_script_hash
        elif kind == "page_info_changed":
            self.query_string = msg.page_info_changed.query_string
        elif kind == "page_not_found" and run is not None:
            run.exceptions.append(f"page not found: {msg.page_not_found.page_name}")
        elif kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
            self._current_fragment = msg.delta.fragment_id
            self._element(msg.delta.new_element, run)
        elif kind == "delta" and msg.delta.WhichOneof("type") == "add_block":
            self._current_fragment = msg.delta.fragment_id
            self._block(msg.delta.add_block, tuple(msg.metadata.delta_path))
        elif kind == "script_finished":
            self._finish(msg.script_finished)
        elif kind == "auto_rerun":
            self.fragments.add(msg.auto_rerun.fragment_id)

    def _element(self, el, run: Run | None) -> None:
        kind = el.WhichOneof("type")
        if kind == "exception":
            if run is not None:
                run.exceptions.append(f"{el.exception.type}: {el.exception.message}")
            return
        sub = getattr(el, kind)
        if run is not None and self.keep_content and kind == "plotly_chart":
            run.charts[sub.id or f"chart{len(run.charts)}"] = sub.spec
        wid = "" if kind == "plotly_chart" else getattr(sub, "id", "")  # charts have ids too, but hold no state
        if not wid:
            return
        self._seen.add(wid)
        self.elements[wid] = sub
        self.widget_fragment[wid] = self._current_fragment
        if kind == "bidi_component" and self.screen is not None and wid.endswith("-" + widths.KEY):
            self.widgets[wid] = WidgetState(id=wid, json_value=json.dumps({"widths": {widths.SCREEN: self.screen}}))
            return
        known = self.widgets.get(wid)
        if known is None or getattr(sub, "set_value", False):
            value = widget_value(kind, sub)
            if value is not None:
                self.widgets[wid] = value

    def _block(self, block, path: tuple[int, ...]) -> None:
        """A lazy tab container is a widget whose value is the open tab's label; its tabs follow as child blocks.
        A lazy expander is a widget whose value is whether it is open."""
        kind = block.WhichOneof("type")
        if kind == "expandable" and block.expandable.id:
            wid = block.expandable.id
            self._seen.add(wid)
            self.widget_fragment[wid] = self._current_fragment
            self.widgets.setdefault(wid, WidgetState(id=wid, bool_value=block.expandable.expanded))
        elif kind == "tab_container" and block.tab_container.id:
            wid = block.tab_container.id
            self._seen.add(wid)
            self.widget_fragment[wid] = self._current_fragment
            self._tab_paths[path] = (wid, block.tab_container.default_tab_index)
            self.tabs[wid] = []
        elif kind == "tab" and path[:-1] in self._tab_paths:
            wid, open_index = self._tab_paths[path[:-1]]
            self.tabs[wid].append(block.tab.label)
            if wid not in self.widgets and len(self.tabs[wid]) - 1 == open_index:  # the tab the server opened
                self.widgets[wid] = WidgetState(id=wid, string_value=block.tab.label)

    def _finish(self, status: int) -> None:
        run = self._run
        if run is None:
            return
        run.latency = time.perf_counter() - self._sent_at
        run.status = FINISHED[status]
        if status != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
            # The frontend forgets widgets the run did not draw and ages its message cache.
            rerun = self._run_fragment  # a fragment's run leaves the widgets outside it as they were
            self.widgets = {
                k: v
                for k, v in self.widgets.items()
                if k in self._seen or (rerun and self.widget_fragment.get(k) != rerun)
            }
            self.cache = {h: (m, age + 1) for h, (m, age) in self.cache.items() if age + 1 <= self.max_cache_age}
        # A run that finished early for a rerun (the script's st.rerun, or a request the server took meanwhile) is
        # followed by that rerun, as a browser sees it: the request is answered by the run that finishes.
        if status != ForwardMsg.FINISHED_EARLY_FOR_RERUN and self._done is not None and not self._done.done():
            self._done.set_result(None)
