"""`make test` runs on two workers with pytest-xdist's --dist loadgroup (tests/conftest.py): a test file, or a page's
browser cases, go whole to one worker, whose module fixtures then load each page once. pytest 9.2 with pytest-xdist
3.8 drops the groups without a word (pytest-dev/pytest-xdist#1386: the cases spread over the workers and each page was
loaded again and again; the layout test took 7 min instead of 2): requirements-dev.txt pins pytest 9.1.1."""

from __future__ import annotations


def test_this_test_runs_in_its_group(request):
    """Under --dist loadgroup xdist names each test's group after its id ("…@tests/test_workers.py"); without it
    (a plain `pytest` run) there are no groups to check."""
    [mark] = list(request.node.iter_markers("xdist_group"))
    assert mark.args == ("tests/test_workers.py",)
    if getattr(request.config.option, "loadgroup", False):  # set on the workers by --dist loadgroup
        assert request.node.nodeid.endswith("@tests/test_workers.py"), request.node.nodeid


def test_the_groups_go_out_in_the_order_the_conftest_gives(request):
    """tests/conftest.py sorts the groups longest first (the browser pages, then the slow files); xdist would send them
    by their number of tests instead (the one-test browser groups, 15–30 s each, last) unless told not to."""
    if getattr(request.config.option, "loadgroup", False):
        assert request.config.option.loadscopereorder is False, "run with --no-loadscope-reorder (Makefile)"
