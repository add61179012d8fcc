"""The Dockerfile's image holds what the app needs: its COPY lines, copied alone into an empty folder, serve every page.

(No Docker engine runs on the test machines, so the image itself is not built here.)
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap

from tests.apptest_utils import ROOT

RUN_PAGES = textwrap.dedent(
    """
    import pathlib, sys
    from streamlit.testing.v1 import AppTest
    for page in ["app.py", *sorted(str(p) for p in pathlib.Path("pages").glob("*.py"))]:
        at = AppTest.from_file(page, default_timeout=120).run()
        assert not at.exception, (page, [e.stack_trace for e in at.exception])
        assert at.title, page
        assert (
            at.get("plotly_chart") or at.get("dataframe") or "show_figure" not in pathlib.Path(page).read_text()
        ), page
    print("ok")
    """
)


def copied_paths() -> list[str]:
    """The sources of the Dockerfile's COPY lines, except the requirements files (installed, not run)."""
    lines = [line.split() for line in (ROOT / "Dockerfile").read_text().splitlines() if line.startswith("COPY ")]
    return [src for _, src, _ in lines if not src.startswith("requirements")]


def test_the_image_files_alone_serve_every_page(tmp_path):
    for src in copied_paths():
        (shutil.copytree if (ROOT / src).is_dir() else shutil.copy)(ROOT / src, tmp_path / src)
    assert (
        {"app.py", "home.py", "pages", "ui", "figures", "lessons", "transformer", "assets", ".streamlit"}
        <= set(copied_paths())
    )
    done = subprocess.run(
        [sys.executable, "-c", RUN_PAGES],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stderr[-3000:]
