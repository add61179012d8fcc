"""Browser latency: from a key press on a slider to the updated plots being painted, on every page.

    .venv/bin/python bench/bench_browser.py [--tokens 16 64] [--samples 8] [--repeats 2]
        [--pages One_head home] [--model smollm2-135m]

Serves the app (scripts/browser.py) and opens each page in headless Chromium on --model (the query string's model=…;
default the bundled shakespeare-gpt) with a Shakespeare passage of exactly N tokens of that model (a different passage
per page, so no page finds another page's traces in the server's cache). It focuses
the sidebar's "Attention temperature τ" slider and presses an arrow key: one press = one 0.05 step = one rerun.
A page whose parts sit in lazy tabs (only the open one runs and is drawn) is measured with the tab that τ changes
open (OPEN_TAB: One head's step 4, as scripts/browser.py SHOWN_TAB; Tokens' part 3, where its main control is).
"new": every press goes on to a τ not seen before (a fresh trace and fresh figures: what dragging costs);
"repeat": the opposite key, then the key again, toggles between two values already seen (what caches save).
When τ redraws no chart of a page (found in the warm-up), three samples of it are kept (the bare rerun), and when
it changes no chart, the page's own main control (PAGE_CONTROLS) is measured the same way on the next row (at the
first length only: these controls do not move with the length, so a later length would meet cached values).

Each sample is timed in the page's own clock (performance.now()), from the keydown event:
  request  the rerun request leaves on the websocket
  reply    the server's message that the rerun is over has arrived
  updated  every chart that changed is visible with its new content, and that frame has been painted
  settled  the last frame with a DOM change inside any chart has been painted (later passes included)
  long     main-thread time in frames longer than 50 ms (the browser's share of the wait)
A chart has "changed" when its image hrefs (heatmaps), path data and styles (bars, lines, markers) or text differ
from before the press. Streamlit rebuilds a changed chart hidden (visibility: hidden) and shows it when done, so
new content counts only once the chart is visible. A requestAnimationFrame loop notes the first frame showing it;
that frame is painted when its rendering is over: a long frame reports its end (Long Animation Frame API), a short
one was over before the next frame or the next long frame began. (Checked against Chromium traces on home,
One_head and Context: from about 10 ms before to 35 ms after that frame's Paint and Commit to the compositor.)
KiB = websocket payload received during the rerun (the server negotiates no compression: about the wire bytes).
The instrumentation's own cost is in the numbers (One_head: ~29k mutation records per rerun, ~10-20 ms).
Prints a table; asserts nothing. The load average it prints includes this run's own server and browser (~2 on
two cores): check that nothing else runs, since the numbers move with the machine's load.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import urllib.parse
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from playwright.sync_api import sync_playwright  # noqa: E402
from texts import cut_to_tokens  # noqa: E402

from scripts.browser import SHOWN_TAB, launch, new_tab, open_tab, page_url, serve_app, wait_rendered  # noqa: E402
from transformer.loading import load_model  # noqa: E402

PASSAGE = (ROOT.parent / "shared" / "corpora" / "tinyshakespeare.txt").read_text()[:40_000]
TAU = "Attention temperature τ"
PAGE_CONTROLS = {  # each page's main control, for pages where τ changes no chart
    "1_Tokens_and_embeddings": "Vocabulary tokens in the map (N)",  # in its part 3 (OPEN_TAB)
    "2_Positional_encoding": "d (dimensions)",
    "5_Softmax_and_temperature": "τ on this page",
    "6_Lecture_example": "Seed",
}
OPEN_TAB = SHOWN_TAB | {"1_Tokens_and_embeddings": "3 · A map of the space"}  # the tab measured
START_TAU = {16: 1.0, 64: 2.5}  # per length, so a later length never meets τ values cached by an earlier one
WARMUP = 2
QUIET_MS = 300  # a rerun is over once the server said so and the DOM has not changed for this long
NAN = float("nan")

INSTRUMENT = """
(() => {
  const B = window.__bench = {armed: false};
  const size = d => d.byteLength ?? d.size ?? d.length ?? 0;
  const charts = () => [...document.querySelectorAll('.stPlotlyChart')];
  const shown = c => {
    const p = c.querySelector('.js-plotly-plot');
    return !!p && p.checkVisibility({visibilityProperty: true});
  };
  const attrs = (c, sel, name) => [...c.querySelectorAll(sel)].map(e => e.getAttribute(name)).join('\\n');
  const sig = c => shown(c)
    ? [attrs(c, 'image', 'href'), attrs(c, 'path', 'd'), attrs(c, 'path', 'style'), c.textContent].join('|')
    : null;
  const Ws = window.WebSocket;
  // The server's last message of a rerun: ForwardMsg.session_status_changed (field 9, tag 0x4a) without
  // script_is_running = true (field 2 of SessionStatus: bytes 0x10 0x01).
  const idle = d => {
    const u = new Uint8Array(d);
    return u[0] === 0x4a && !u.subarray(2).some((b, i, a) => b === 0x10 && a[i + 1] === 1);
  };
  const received = d => {
    const t = performance.now();
    B.msgs.push([t, size(d)]);
    if (B.key !== null && d instanceof ArrayBuffer && idle(d)) B.finished = t;
  };
  window.WebSocket = class extends Ws {
    constructor(...args) { super(...args); this.addEventListener('message', e => B.armed && received(e.data)); }
    send(data) { if (B.armed) B.sends.push(performance.now()); return super.send(data); }
  };
  document.addEventListener('keydown', () => { if (B.armed && B.key === null) B.key = performance.now(); }, true);
  const dirty = new Set();
  new MutationObserver(records => {
    if (!B.armed) return;
    B.lastMutation = performance.now();
    let last = null, c = null;
    for (const r of records) {
      if (r.target !== last) {  // plotly makes thousands of changes, mostly to the same node several times in a row
        last = r.target;
        c = (r.target.nodeType === 1 ? r.target : r.target.parentElement)?.closest('.stPlotlyChart');
      }
      if (c) dirty.add(c);
      else for (const n of r.addedNodes) {  // a chart built elsewhere and inserted whole
        if (n.nodeType === 1) {
          for (const a of n.matches('.stPlotlyChart') ? [n] : n.querySelectorAll('.stPlotlyChart')) dirty.add(a);
        }
      }
    }
  }).observe(document, {subtree: true, childList: true, attributes: true, characterData: true});
  // Frames over 50 ms ("long animation frames") report when their rendering ended.
  new PerformanceObserver(list => {
    if (B.armed) {
      for (const e of list.getEntries()) B.loafs.push([e.startTime, e.renderStart, e.startTime + e.duration]);
    }
  }).observe({type: 'long-animation-frame'});
  const frame = () => {  // a rAF callback: the DOM as it is now goes into this frame
    if (!B.armed) return;
    const t = performance.now();
    B.frames.push(t);
    if (dirty.size) {
      const all = charts();
      for (const c of dirty) {
        const i = all.indexOf(c), s = i >= 0 && !(i in B.seen) ? sig(c) : null;
        if (s !== null && s !== B.base[i]) B.seen[i] = t;
      }
      dirty.clear();
      B.lastChartFrame = t;
    }
    requestAnimationFrame(frame);
  };
  B.arm = () => {
    dirty.clear();
    Object.assign(B, {
      base: charts().map(sig), armed: true, key: null, finished: null, sends: [], msgs: [], frames: [], loafs: [],
      seen: {}, lastMutation: 0, lastChartFrame: null,
    });
    requestAnimationFrame(frame);
  };
  B.quiet = ms => B.finished !== null && performance.now() - Math.max(B.finished, B.lastMutation) > ms;
  B.finish = () => {
    B.armed = false;
    const now = charts().map(sig);
    const changed = now.map((s, i) => s !== null && s !== B.base[i] ? i : -1).filter(i => i >= 0);
    return {
      key: B.key, finished: B.finished, sends: B.sends, msgs: B.msgs, frames: B.frames, loafs: B.loafs,
      lastChartFrame: B.lastChartFrame, changed: changed.length, seen: changed.map(i => B.seen[i] ?? null),
      charts: now.length,
    };
  };
})();
"""


def passages(model: str, n_tokens: int, count: int) -> list[str]:
    """`count` non-overlapping passages of exactly n_tokens tokens of the model, each starting at a line."""
    tok = load_model(model).tokenizer
    out, start = [], 0
    if getattr(tok, "add_special_tokens", False):  # BERT's [CLS] … [SEP] count: texts.cut_to_tokens knows them
        while len(out) < count:
            piece = cut_to_tokens(tok, PASSAGE, n_tokens, start)  # from `start` or a later line start
            out.append(piece)
            start = PASSAGE.find("\n", PASSAGE.index(piece, start) + len(piece)) + 1 or len(PASSAGE)  # the next line
        return out
    offsets = tok.encode(PASSAGE).offsets
    while len(out) < count:
        a = offsets[start][0]
        text = PASSAGE[a : offsets[start + n_tokens - 1][1]]
        if (a == 0 or PASSAGE[a - 1] == "\n") and len(tok.encode(text).ids) == n_tokens:
            out.append(text)
            start += n_tokens
        else:
            start += 1
    return out


def painted(t: float, frames: list[float], loafs: list[list[float]]) -> float:
    """When the rendering (style, layout, paint) of the frame whose rAF callbacks ran at t was over.

    A long frame reports its own end; a short one was over before the next frame or the next long frame began."""
    for _, render, end in loafs:
        if render - 1 <= t <= end:
            return end
    return min([f for f in frames if f > t] + [start for start, _, _ in loafs if start > t], default=NAN)


def sample(tab, control, key: str) -> dict:
    """Press `key` on the focused control once; timings (ms after keydown) and bytes of the rerun it caused."""
    control.focus()
    before = control.input_value()
    tab.evaluate("__bench.arm()")
    control.press(key)
    if control.input_value() == before:
        raise RuntimeError(f"{key} left {control} at {before}: the control is at its end")
    tab.wait_for_function(f"() => __bench.quiet({QUIET_MS})", polling=50, timeout=60_000)
    r = tab.evaluate("__bench.finish()")
    k, seen = r["key"], r["seen"]
    return {
        "request": r["sends"][0] - k if r["sends"] else NAN,
        "reply": r["finished"] - k,
        "updated": painted(max(seen), r["frames"], r["loafs"]) - k if seen and None not in seen else NAN,
        "settled": painted(r["lastChartFrame"], r["frames"], r["loafs"]) - k if r["lastChartFrame"] else NAN,
        "long": sum(end - max(start, k) for start, _, end in r["loafs"] if end > k),
        "bytes": sum(n for _, n in r["msgs"]),
        "changed": r["changed"],
        "redrawn": r["lastChartFrame"] is not None,
        "charts": r["charts"],
    }


def room(control) -> tuple[str, float]:
    """The arrow key with more steps left before the control's end, and how many steps that is."""
    lo, hi, step, value = control.evaluate("e => [e.min, e.max, e.step, e.value].map(x => x === '' ? null : Number(x))")
    up = (hi - value) / (step or 1) if hi is not None else float("inf")
    down = (value - lo) / (step or 1) if lo is not None else float("inf")
    return ("ArrowUp", up) if up >= down else ("ArrowDown", down)


def series(tab, control, samples: int, repeats: int) -> tuple[list[dict], list[dict]]:
    """("new" samples, "repeat" samples) of one control, after WARMUP presses; fewer when it redraws no chart."""
    key, steps = room(control)
    warm = [sample(tab, control, key) for _ in range(WARMUP)]
    if not any(s["redrawn"] for s in warm):
        samples, repeats = 3, 0
    new = [sample(tab, control, key) for _ in range(max(1, min(samples, int(steps + 1e-6) - WARMUP)))]
    back = {"ArrowUp": "ArrowDown", "ArrowDown": "ArrowUp"}[key]
    return new, [sample(tab, control, back if i % 2 == 0 else key) for i in range(repeats)]


def stats(values: list[float]) -> tuple[float, float]:
    """(median, p90) of the finite values, NaN when there are none."""
    v = sorted(x for x in values if x == x)
    if not v:
        return NAN, NAN
    return statistics.median(v), v[min(len(v) - 1, round(0.9 * (len(v) - 1)))]


COLUMNS = (
    "n", "changed", "request", "reply", "updated", "p90", "settled", "p90", "long", "KiB", "| rep upd", "rep KiB",
)


def row(name: str, new: list[dict], repeat: list[dict]) -> list[str]:
    """One table row: medians (and p90) of the "new" samples, then medians of the "repeat" samples."""
    med = {k: stats([s[k] for s in new]) for k in ("request", "reply", "updated", "settled", "long", "bytes")}
    rep = {k: stats([s[k] for s in repeat]) for k in ("updated", "bytes")}
    ms = [med["request"][0], med["reply"][0], *med["updated"], *med["settled"], med["long"][0]]
    changed = f"{max(s['changed'] for s in new)}/{max(s['charts'] for s in new)}"
    return [
        name, str(len(new)), changed, *(f"{x:.0f}" for x in ms), f"{med['bytes'][0] / 1024:.1f}",
        f"{rep['updated'][0]:.0f}", f"{rep['bytes'][0] / 1024:.1f}",
    ]


def show(cells: list[str]) -> None:
    print(
        f"{cells[0]:38}"
        + "".join(f"{c.replace('nan', '—'):>{max(len(h), 5) + 2}}" for c, h in zip(cells[1:], COLUMNS, strict=True)),
        flush=True,
    )


def bench_page(browser, base: str, page: Path | None, sentence: str, tau: float, args, own_control: bool) -> None:
    """Print the τ row of one page, and the row of its own control when τ changes none of its charts."""
    name = page.stem if page else "home"
    tab = new_tab(browser, viewport={"width": 1300, "height": 900})
    tab.add_init_script(INSTRUMENT)
    tab.goto(
        page_url(base, page)
        + "?"
        + urllib.parse.urlencode(
            {"model": args.model, "sentence": sentence, "temperature": tau}
            | ({} if args.layer is None else {"layer": args.layer})
        )
    )
    wait_rendered(tab)
    if name in OPEN_TAB:
        open_tab(tab, OPEN_TAB[name])
    try:
        if tab.locator('[data-testid="stException"]').count():
            print(f"{name:38}  the page shows an exception: not measured")
            return
        new, repeat = series(
            tab, tab.locator(f'[data-testid="stSidebar"] input[aria-label="{TAU}"]'), args.samples, args.repeats
        )
        show(row(name, new, repeat))
        label = PAGE_CONTROLS.get(name)
        if own_control and label and not any(s["changed"] for s in new):
            control = tab.locator(f'[data-testid="stMain"] input[aria-label="{label}"]')
            show(row(f"  ↳ {label}", *series(tab, control, args.samples, args.repeats)))
    finally:
        tab.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--tokens", type=int, nargs="+", default=[16], choices=sorted(START_TAU), help="sentence lengths in tokens"
    )
    ap.add_argument("--samples", type=int, default=8, help="timed presses to new values per page")
    ap.add_argument("--repeats", type=int, default=2, help="timed presses toggling between two seen values (0 = skip)")
    ap.add_argument("--pages", nargs="*", help="only pages whose file name contains one of these (home = app.py)")
    ap.add_argument("--model", default="shakespeare-gpt", help="the model the pages open (query string model=…)")
    ap.add_argument("--layer", type=int, help="the sidebar's layer (query string layer=…; default: the page's own, 0)")
    args = ap.parse_args()
    # (the guided tour has no chart to time)
    charted = [p for p in (ROOT / "pages").glob("*.py") if "show_figure" in p.read_text(encoding="utf-8")]
    pages = [None, *sorted(charted, key=lambda p: int(p.stem.split("_")[0]))]
    if args.pages:
        pages = [p for p in pages if any(s in (p.stem if p else "home") for s in args.pages)]
    with serve_app() as base, sync_playwright() as pw:
        browser = launch(pw)
        for i, n in enumerate(args.tokens):
            print(
                f"\nmodel {args.model}, {n} tokens, τ from {START_TAU[n]} up by 0.05; ms after the keydown: "
                f"medians (p90); load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores"
            )
            show(["page", *COLUMNS])
            for page, sentence in zip(pages, passages(args.model, n, len(pages)), strict=True):
                bench_page(browser, base, page, sentence, START_TAU[n], args, own_control=i == 0)
            print(f"load average afterwards {os.getloadavg()[0]:.2f}")
        browser.close()


if __name__ == "__main__":
    main()
