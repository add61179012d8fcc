"""The sidebar menu as one small component (ui/watcher.py: plain JavaScript in the page, no iframe): a heading per
section and a list of links, the current page marked (aria-current). A link opens its page in the same session, as
Streamlit's page links do: it puts the page's address in the browser's history and tells Streamlit's router so
(the `popstate` event a Back press sends); a click with a modifier key, or a middle click, opens the address as any
link does.

One element a run, where one Streamlit page link per page and a heading per section were 22 (a run of One head
sends 77 messages instead of 97): ~10 % of a served rerun's CPU, and ~8 % of the browser's CPU per run
(bench/history/class.md). Without components v2, ui/navigation.py draws Streamlit's page links (one warning).
The home page's pipeline is the same component: its links also say what each page shows, under its own headings.
"""

from __future__ import annotations

from . import watcher

CLASS = "atlas-menu"
# data: {sections: [[heading, [[icon, title, address, blurb?], ...]], ...], here: the current page's address, and
# optionally label: the landmark's name ("Pages"), heading: the headings' tag ("h3")}. A link with a blurb reads
# "**title** · blurb". Built once and then only marked again (so that a link that has the focus keeps it when its page
# opens), unless the pages changed.
JS = """
export default function ({ data, parentElement }) {
  const path = location.pathname.replace(/\\/+$/, '');
  const base = (data.here && path.endsWith('/' + data.here) ? path.slice(0, -data.here.length - 1) : path) + '/';
  const built = JSON.stringify(data.sections);
  let nav = parentElement.querySelector('nav.{cls}');
  if (!nav || nav.dataset.built !== built) {
    nav = document.createElement('nav');
    nav.className = '{cls}';
    nav.setAttribute('aria-label', data.label || 'Pages');
    nav.dataset.built = built;
    for (const [heading, pages] of data.sections) {
      const h = document.createElement(data.heading || 'h3');
      h.textContent = heading;
      const list = document.createElement('ul');
      for (const [icon, title, address, blurb] of pages) {
        const mark = document.createElement('span');
        mark.textContent = icon;
        mark.setAttribute('aria-hidden', 'true');
        const a = document.createElement('a');
        a.href = base + address;
        a.dataset.address = address;
        if (blurb) {
          const name = document.createElement('strong');
          name.textContent = title;
          const words = document.createElement('span');
          words.append(name, ' · ' + blurb);
          a.append(mark, words);
        } else a.append(mark, title);
        const item = document.createElement('li');
        item.append(a);
        list.append(item);
      }
      nav.append(h, list);
    }
    parentElement.replaceChildren(nav);
  }
  for (const a of nav.querySelectorAll('a')) {
    if (a.dataset.address === data.here) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  const open = (e) => {
    const a = e.target.closest('a');
    if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    history.pushState(null, '', a.href);
    dispatchEvent(new PopStateEvent('popstate'));
  };
  nav.addEventListener('click', open);
  return () => nav.removeEventListener('click', open);
}
""".replace("{cls}", CLASS)
# In the page's style sheet (ui/a11y.py): a component's own CSS is not applied when it is not isolated in a shadow root.
CSS = f"""
.{CLASS} h3 {{ font-weight: 600; margin: 0; }}  /* its size and padding: ui/a11y.py, as for the fallback */
.{CLASS} ul {{ list-style: none; margin: 0; padding: 0; }}
.{CLASS} li {{ margin: 0; padding: 0; }}
.{CLASS} a {{ display: flex; gap: 0.5rem; align-items: center; padding: 0.125rem 0.5rem; border-radius: 0.5rem;
  color: inherit; text-decoration: none; line-height: 2; }}
.{CLASS} a:hover {{ background: rgba(151, 166, 195, 0.15); }}
.{CLASS} a[aria-current="page"] {{ background: rgba(151, 166, 195, 0.25); font-weight: 600; }}
.{CLASS} h4 {{ font-size: inherit; font-weight: 600; margin: 0; padding: 0.75rem 0 0.25rem; }}  /* the pipeline's */
/* a link with a blurb: the size of Streamlit's page links (the guided tour's, above the pipeline) */
.{CLASS} a:has(strong) {{ font-size: 0.875rem; line-height: 1.5; align-items: baseline; padding: 0.25rem 0.5rem; }}
"""


def component():
    """The menu component, or None (after one warning) when Streamlit has no st.components.v2.component."""
    return watcher.component("atlas_menu", "the menu is drawn as Streamlit's page links", js=JS, isolate_styles=False)


links = component()
