"""Page rerun cost through AppTest: median rerun time and bytes of the page's elements, at 16 and 256 tokens.

Each page is run once to warm up, then re-run while the attention-temperature slider alternates
(a control change forces the page to rebuild every figure). Prints a table; asserts nothing.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from streamlit.testing.v1 import AppTest  # noqa: E402

from transformer.loading import load_model  # noqa: E402

PASSAGE = (ROOT.parent / "shared" / "corpora" / "tinyshakespeare.txt").read_text()[:20_000]
REPEATS = 7


def text_of(n_tokens: int) -> str:
    """A Shakespeare passage cut to exactly n_tokens tokens of the bundled model."""
    enc = load_model("shakespeare-gpt").tokenizer.encode(PASSAGE)
    return PASSAGE[: enc.offsets[n_tokens - 1][1]]


def page_bytes(at: AppTest) -> int:
    """Serialized size of every element on the page (≈ what one full rerun sends)."""
    total = 0
    stack = [at._tree]
    while stack:
        node = stack.pop()
        proto = getattr(node, "proto", None)
        if proto is not None and hasattr(proto, "ByteSize"):
            total += proto.ByteSize()
        stack.extend(getattr(node, "children", {}).values())
    return total


def measure(page: Path, sentence: str) -> tuple[float, int]:
    at = AppTest.from_file(str(page), default_timeout=120)
    at.query_params["sentence"] = sentence
    at.run()
    if at.exception:
        raise RuntimeError(f"{page.name}: {at.exception[0].value}")
    times = []
    for i in range(REPEATS):
        at.slider(key="w_temperature").set_value(0.95 if i % 2 == 0 else 1.0)
        t0 = time.perf_counter()
        at.run()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000, page_bytes(at)


def main() -> None:
    pages = [ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py"))]
    sentences = {n: text_of(n) for n in (16, 256)}
    print(f"{'page':32} {'ms @16':>8} {'KiB @16':>8} {'ms @256':>8} {'KiB @256':>9}")
    for page in pages:
        row = [measure(page, sentences[n]) for n in (16, 256)]
        print(f"{page.stem:32} {row[0][0]:8.1f} {row[0][1] / 1024:8.1f} {row[1][0]:8.1f} {row[1][1] / 1024:9.1f}")


if __name__ == "__main__":
    main()
