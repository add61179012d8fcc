"""One Streamlit process of a class server (scripts/serve.py), with the default model loaded as it starts.

    python scripts/worker.py --server.port 8601 --server.address 127.0.0.1 --server.headless true

The same as `streamlit run app.py` with those options, except that a thread loads the model a new session opens
while the server starts, and then runs it on the sidebar's preset sentences (every layer, into the trace cache
every session shares): the first student of this process (or one sent here when another process died) waits for
neither, and a class that picks a preset finds its trace made. A model that cannot be loaded is left for the page to
report.
"""

from __future__ import annotations

import logging
import sys
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# Imported here, on the main thread, before the server and the loading thread start (an import racing the first
# session's import of the same modules can see them half made).
from streamlit.web import cli  # noqa: E402

from transformer.errors import ModelLoadError  # noqa: E402
from transformer.loading import bundled_models, default_model, real_models, shared_model  # noqa: E402

logging.getLogger("streamlit.runtime.caching.cache_data_api").setLevel(logging.ERROR)  # "no runtime yet": not yet
from ui.models import TraceKey, get_trace  # noqa: E402
from ui.state import PRESETS  # noqa: E402

logging.getLogger("streamlit.runtime.caching.cache_data_api").setLevel(logging.NOTSET)


def preload() -> None:
    """Load the model a new session opens into the registry every session shares (transformer.loading), and trace
    the preset sentences through all its blocks."""
    name = default_model(real_models() + bundled_models())
    try:
        shared_model(name, restrict=True)
    except ModelLoadError:
        return  # the page says why, to the student who opens it
    for sentence in PRESETS.values():
        get_trace(TraceKey(name, sentence)).run_blocks()


def main() -> None:
    threading.Thread(target=preload, name="atlas-preload", daemon=True).start()
    cli.main(["run", str(ROOT / "app.py"), *sys.argv[1:]], prog_name="streamlit")


if __name__ == "__main__":
    main()
