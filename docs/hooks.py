"""mkdocs hook: the docstrings are written with Sphinx cross-reference roles (:class:`~a.B`,
:meth:`c`, ...), which mkdocstrings renders as plain text before the code span. This turns
each role into the code span alone (with ``~``, the last component only, as Sphinx shows it)."""
import re

_ROLE = re.compile(r":(?:py:)?(?:class|meth|func|mod|attr|data|exc|obj|const):<code>(~?)([^<]+)</code>")


def _code(m: re.Match) -> str:
    target = m.group(2).strip()
    if m.group(1):
        target = target.rsplit(".", 1)[-1]
    return f"<code>{target}</code>"


def on_page_content(html: str, **kwargs) -> str:
    return _ROLE.sub(_code, html)
