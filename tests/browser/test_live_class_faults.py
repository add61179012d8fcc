"""A live class survives the death of a student's process: two app processes behind HAProxy share one Redis
(`make serve` with ATLAS_REDIS_URL); the process that serves a student is killed after the student answered a
question. The student's page reconnects to the live process by itself, follows the teacher's next move within 10 s,
and the answer is still counted."""

from __future__ import annotations

import pytest

from scripts.browser import new_tab, wait_rendered
from scripts.serve import free_port, serving
from tests.browser.test_live_class import one_chart_says, shows, slider, start_class, teacher_moves, view
from ui.live import REDIS_ENV
from ui.live.redis_store import own_server

playwright_api = pytest.importorskip("playwright.sync_api")
expect = playwright_api.expect
pytestmark = pytest.mark.browser

BACK_MS = 10_000  # the bound: a student of a dead process follows again within this time


def replica(context) -> str:
    return next(k["value"] for k in context.cookies() if k["name"] == "ATLAS_REPLICA")


def test_a_student_whose_process_dies_follows_again_and_keeps_the_answer(browser, monkeypatch):
    with own_server(free_port()) as url:
        monkeypatch.setenv(REDIS_ENV, url)
        with serving(2) as c:
            contexts = []
            try:
                contexts.append(browser.new_context(viewport={"width": 1300, "height": 900}))
                teacher = new_tab(contexts[0])
                link = start_class(teacher, c.url)
                # a student on the other process (HAProxy sends a new browser to the less busy one)
                for _ in range(3):
                    contexts.append(browser.new_context(viewport={"width": 1300, "height": 900}))
                    student = new_tab(contexts[-1])
                    student.goto(link)
                    wait_rendered(student)
                    if replica(contexts[-1]) != replica(contexts[0]):
                        break
                assert replica(contexts[-1]) != replica(contexts[0]), "both browsers on one process"
                expect(student.locator(".st-key-live_bar")).to_contain_text("you follow the teacher")

                teacher.get_by_role("button", name="Ask the class").first.click()
                teacher.get_by_role("button", name="Ask the class").last.click()
                form = student.locator(".st-key-live_bar")
                expect(form).to_contain_text("Question 1.", timeout=5_000)
                form.get_by_role("radio").nth(0).check(force=True)
                form.get_by_role("button", name="Send").click()
                expect(form).to_contain_text("Your answer", timeout=5_000)
                one_chart_says(teacher, "1 answer")

                dead = c.procs[int(replica(contexts[-1]).removeprefix("atlas")) - 1]
                dead.kill()
                dead.wait(10)
                status = student.locator('[data-testid="stConnectionStatus"]')
                status.wait_for(state="visible", timeout=10_000)
                wanted = teacher_moves(teacher, lambda: slider(teacher, "Head").press("ArrowRight"))
                assert shows(student, wanted, within_ms=BACK_MS), (view(student), wanted)
                expect(student.locator(".st-key-live_bar")).to_contain_text("Your answer", timeout=5_000)
                one_chart_says(teacher, "1 answer")  # counted once: not lost, not counted again
                for page in (teacher, student):
                    assert page.locator('[data-testid="stException"]').count() == 0
            finally:
                for context in contexts:
                    context.close()
