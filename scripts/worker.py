"""One Streamlit process of a class server (scripts/serve.py), with the default model loaded as it starts.

    python scripts/worker.py --server.port 8601 --server.address 127.0.0.1 --server.headless true

The same as `streamlit run app.py` with those options, except that a thread loads the model a new session opens
while the server starts: the first student of this process (or one sent here when another process died) does not
wait for it. A model that cannot be loaded is left for the page to report.
"""

from __future__ import annotations

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


def preload() -> None:
    """Load the model a new session opens into the registry every session shares (transformer.loading)."""
    try:
        shared_model(default_model(real_models() + bundled_models()), restrict=True)
    except ModelLoadError:
        pass  # the page says why, to the student who opens it


def main() -> None:
    threading.Thread(target=preload, name="atlas-preload", daemon=True).start()
    cli.main(["run", str(ROOT / "app.py"), *sys.argv[1:]], prog_name="streamlit")


if __name__ == "__main__":
    main()
