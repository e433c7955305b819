"""HTML to markdown for WebFetch, with markdownify (on BeautifulSoup): a well-kept converter instead of a
hand-written one. Scripts, styles and other non-content elements are dropped first."""

from __future__ import annotations

import re

DROPPED = ("script", "style", "noscript", "template", "iframe", "svg", "canvas", "head")


def to_markdown(html: str) -> str:
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(html, "html.parser")
    title = soup.title.get_text(strip=True) if soup.title else ""
    for tag in soup(DROPPED):
        tag.decompose()
    text = MarkdownConverter(heading_style="ATX", bullets="-").convert_soup(soup)
    text = re.sub(r"\n{3,}", "\n\n", text).strip()
    return f"# {title}\n\n{text}" if title and not text.startswith(f"# {title}") else text


__all__ = ["to_markdown"]
