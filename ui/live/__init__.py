"""The live class: a teacher leads, every student's page follows, and the class answers questions (docs/live_class.md).

store.py and redis_store.py keep the classes, classroom.py holds the rules, questions.py builds a question and the
model's own answer from the page's trace, panel.py draws the teacher's and the students' controls, wake.py reruns the
students' pages when their class changes.
"""

from __future__ import annotations

import functools
import os

from .classroom import Classroom
from .store import MemoryStore

REDIS_ENV = "ATLAS_REDIS_URL"


@functools.cache
def room() -> Classroom:
    """This process's classes: in Redis when ATLAS_REDIS_URL is set (every process of a class server shares them),
    else in this process's memory. Each change of a class wakes this process's pages that follow it."""
    from . import wake  # Streamlit's runtime: only where pages run

    url = os.environ.get(REDIS_ENV, "").strip()
    if url:
        from .redis_store import RedisStore  # the redis client is needed only then

        store = RedisStore(url)
    else:
        store = MemoryStore()
    store.listen(wake.wake)
    return Classroom(store)
