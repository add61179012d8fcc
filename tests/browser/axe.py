"""axe-core (WCAG 2.0 and 2.1, levels A and AA) in a page: its serious and critical violations.

axe-core comes from npm (package.json; `make test` and `make a11y` install it): the tests inject node_modules'
axe.min.js into the page; the app itself never loads it.
"""

from __future__ import annotations

from scripts.browser import ROOT

AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
# Every violation of the page as it is now: rule id, impact, and where (axe's CSS selector of each element).
RUN_AXE = """async (tags) => {
  const result = await axe.run(document, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']});
  return result.violations.flatMap((v) => v.nodes.map((n) => ({id: v.id, impact: v.impact, target: n.target.join(' '),
    summary: n.failureSummary.slice(0, 240)})));
}"""


def add_axe(tab) -> None:
    """Inject axe-core into the loaded page."""
    tab.add_script_tag(path=str(AXE))


def serious(tab, where: str) -> list[str]:
    """The serious and critical violations axe finds in the page as it is, each as one readable line."""
    found = tab.evaluate(RUN_AXE, TAGS)
    return [f"{where}: {v['id']} ({v['impact']}) at {v['target']}: {v['summary']}" for v in found
            if v["impact"] in ("serious", "critical")]
