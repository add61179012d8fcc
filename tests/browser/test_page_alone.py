"""A move of a page's own controls runs the page alone (ui/navigation.page_alone), in headless Chromium: the browser
sends the move with the page's fragment, and the server runs the page without the router, the menu, the skip link
and the class's bar, which stay on screen as they were. Presenter view, whose sidebar state only a whole run sets,
still gets a whole run. A fragment's request sent from the page the browser has left does not blank the page the
server opened. Read from the websocket's own messages (Streamlit's ForwardMsg)."""

from __future__ import annotations

import re

import pytest
from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from scripts.browser import ROOT, page_url, wait_rendered
from ui import a11y, page_script, presenter

expect = pytest.importorskip("playwright.sync_api").expect
FINISHED = {v: k for k, v in ForwardMsg.ScriptFinishedStatus.items()}
TEMPERATURE = '[data-testid="stSidebar"] input[aria-label^="Attention temperature"]'


def record_runs(tab) -> list[dict]:
    """The runs the server sends this tab from now on, each as {"status", "kinds": message kinds, "keys": element
    ids}, the run still going last."""
    runs: list[dict] = [{"status": "", "kinds": [], "keys": []}]

    def frame(payload) -> None:
        if isinstance(payload, str):
            return
        msg = ForwardMsg()
        msg.ParseFromString(payload)
        kind, run = msg.WhichOneof("type"), runs[-1]
        run["kinds"].append(kind)
        if kind == "delta" and msg.delta.WhichOneof("type") == "new_element":
            element = msg.delta.new_element
            run["keys"].append(getattr(getattr(element, element.WhichOneof("type")), "id", ""))
        if kind == "script_finished":
            run["status"] = FINISHED[msg.script_finished]
            runs.append({"status": "", "kinds": [], "keys": []})

    tab.on("websocket", lambda ws: ws.on("framereceived", frame))
    return runs


def finished(runs: list[dict]) -> list[dict]:
    return [r for r in runs if r["status"] and r["status"] != "FINISHED_EARLY_FOR_RERUN"]


def test_a_control_of_the_page_runs_the_page_alone(base_url, tab):
    runs = record_runs(tab)
    tab.goto(page_url(base_url, ROOT / "pages" / "3_One_head.py") + "?present=false")
    wait_rendered(tab)
    assert finished(runs)[0]["status"] == "FINISHED_SUCCESSFULLY"  # opening the page: a whole run
    assert "navigation" in finished(runs)[0]["kinds"]
    del runs[:-1]
    tab.locator(TEMPERATURE).press("ArrowRight")
    # the move's run has begun (on a busy machine it can start after wait_rendered's first wait)
    expect(tab).to_have_url(re.compile(r"temperature=1\.05"), timeout=30_000)
    wait_rendered(tab)
    after = finished(runs)  # the page's run, and maybe the width report's (ui/widths.py: a fragment of its own)
    assert {r["status"] for r in after} == {"FINISHED_FRAGMENT_RUN_SUCCESSFULLY"}, after
    moved = [r for r in after if any(k.endswith("-w_temperature") for k in r["keys"])]
    assert len(moved) == 1, after
    [move] = moved
    assert "navigation" not in move["kinds"]  # no router
    assert not any(k.endswith(a11y.MENU_KEY) for k in move["keys"])  # no menu
    # nor the model and preset controls and the page's script (ui/state.side_head, ui/page_script.py)
    assert not any(k.endswith(("-w_model", "-w_preset", "-" + page_script.KEY)) for k in move["keys"]), move["keys"]
    assert any(k.endswith("-onehead_x") for k in move["keys"])  # the page: its chart, and its sidebar controls
    assert "temperature=1.05" in tab.url  # the move reached the page: its state is in the address
    # what the whole run drew stays: the menu and the skip link
    assert tab.locator(f".st-key-{a11y.MENU_KEY}, [data-testid='stSidebar'] nav").count() >= 1
    assert tab.locator(f".st-key-{a11y.SKIP_KEY}").count() == 1
    sidebar = tab.locator('[data-testid="stSidebar"]')
    for label in ("Model", "Preset sentences"):
        expect(sidebar.get_by_label(label, exact=True)).to_have_count(1)
    assert tab.locator(f"#{a11y.ANCHOR_ID}").count() == 1  # the page's run drew the skip link's target again
    assert tab.locator('[data-testid="stException"]').count() == 0
    assert tab.errors == []


def test_presenter_view_switched_in_the_page_gets_a_whole_run(base_url, tab):
    runs = record_runs(tab)
    tab.goto(page_url(base_url, ROOT / "pages" / "3_One_head.py") + "?present=false")
    wait_rendered(tab)
    del runs[:-1]
    tab.get_by_text("Presenter view", exact=True).click()
    wait_rendered(tab)
    # the page's own run (ended early, or not), a whole one, and the width reports' runs (ui/widths.py)
    whole = [r for r in finished(runs) if r["status"] == "FINISHED_SUCCESSFULLY"]
    assert len(whole) == 1 and "navigation" in whole[0]["kinds"], finished(runs)
    assert tab.locator('[data-testid="stSidebar"]').evaluate("e => e.getBoundingClientRect().right") <= 1  # collapsed
    assert f"{presenter.KEY}=true" in tab.url
    assert tab.errors == []


def test_a_fragment_request_sent_from_the_page_the_browser_left_does_not_blank_the_new_page(base_url, tab):
    """The server opens another page (a following student's, when the teacher opened one; here a menu link) while the
    browser, still on the old page, sends a fragment's request: the class poll, or a move of the old page's controls.
    Streamlit ran it after the run that opened the new page with the old page's hash, and its frontend then cleared
    the whole new page (ui/lost_fragments.py). Here the request is sent as the new page's run starts (Playwright
    stands between the page and the server on the websocket)."""
    held: dict = {"request": None, "armed": False, "sent": 0}

    def between(ws) -> None:
        server = ws.connect_to_server()

        def up(payload) -> None:  # the browser's messages: keep its first fragment request
            if isinstance(payload, bytes) and held["request"] is None:
                msg = BackMsg()
                msg.ParseFromString(payload)
                if msg.WhichOneof("type") == "rerun_script" and msg.rerun_script.fragment_id:
                    held["request"] = payload
            server.send(payload)

        def down(payload) -> None:  # the server's: once armed, send the old request as the next run starts
            ws.send(payload)
            if held["armed"] and isinstance(payload, bytes):
                msg = ForwardMsg()
                msg.ParseFromString(payload)
                if msg.WhichOneof("type") == "new_session":
                    held["armed"] = False
                    server.send(held["request"])
                    held["sent"] += 1

        ws.on_message(up)
        server.on_message(down)

    tab.route_web_socket(re.compile(r".*/_stcore/stream"), between)
    tab.goto(base_url + "/")
    wait_rendered(tab)
    tab.locator(TEMPERATURE).press("ArrowRight")  # a move on the home page: its fragment's request
    wait_rendered(tab)
    assert held["request"] is not None
    held["armed"] = True
    tab.locator('[data-testid="stSidebar"]').get_by_role("link", name=re.compile("One head")).click()
    wait_rendered(tab)
    assert held["sent"] == 1
    expect(tab.locator('[data-testid="stMain"] h1')).to_contain_text("One head", timeout=10_000)
    expect(tab.locator(TEMPERATURE)).to_have_count(1)  # the page's controls too
    assert tab.locator('[data-testid="stMain"] .stPlotlyChart').count() >= 1
    assert tab.errors == []
