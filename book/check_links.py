"""Check a built website offline: every internal link and asset resolves, nothing loads remotely,
and every image has a description.

    python -m book.check_links book/_build/html

For every HTML page: each relative `href` / `src` (links, images, scripts, stylesheets) must
name a file of the site (a folder: its index.html), and each `#anchor` must be an id (or an
`<a name>`) of the page it points into. Scripts, stylesheets, images and frames must come from
the site itself, since the site must work without network access; links to other sites
(Binder, the repository, references) are left alone.

`site_images` lists every `<img>` with its alt text, and `undescribed_images` those whose alt
is missing, empty or a file path (what Sphinx writes for an image without one): a reader with a
screen reader hears the alt text in place of the figure.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from functools import cache
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

# (tag, attribute) pairs that load something into the page, rather than link away from it
ASSET_ATTRIBUTES = {
    ("script", "src"),
    ("img", "src"),
    ("iframe", "src"),
    ("source", "src"),
    ("video", "src"),
    ("audio", "src"),
    ("embed", "src"),
}
LINK_ATTRIBUTES = {("a", "href"), ("area", "href"), ("link", "href")}
SCHEMES_NOT_CHECKED = ("mailto", "javascript", "data", "tel")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".gif", ".svg", ".webp", ".pdf")


@dataclass(frozen=True)
class Image:
    """One `<img>` of a page: the page (relative to the site), its src and its alt text (None
    when it has no alt attribute)."""

    page: str
    src: str
    alt: str | None

    def described(self) -> bool:
        """Whether the alt text is words: not missing, empty or a file name or path."""
        alt = (self.alt or "").strip()
        looks_like_a_file = " " not in alt and (alt.lower().endswith(IMAGE_SUFFIXES) or "/" in alt)
        return bool(alt) and alt != self.src and not looks_like_a_file


class _PageParser(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.refs: list[tuple[str, str, str, bool]] = []  # (tag, attribute, value, is_asset)
        self.images: list[tuple[str, str | None]] = []  # (src, alt) of each <img>

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {name: value for name, value in attrs if value is not None}
        if "id" in values:
            self.ids.add(values["id"])
        if tag == "a" and "name" in values:
            self.ids.add(values["name"])
        if tag == "img":
            self.images.append((values.get("src", ""), values.get("alt")))
        for attribute in ("href", "src"):
            if attribute not in values:
                continue
            key = (tag, attribute)
            rel = values.get("rel", "").split()
            loads = key in ASSET_ATTRIBUTES or (
                tag == "link" and ({"stylesheet", "preload", "icon", "modulepreload"} & set(rel))
            )
            if loads or key in LINK_ATTRIBUTES:
                self.refs.append((tag, attribute, values[attribute], loads))


def _pages(site: Path) -> list[Path]:
    """The site's pages: HTML files outside _static/ (where themes keep HTML templates)."""
    return sorted(p for p in site.rglob("*.html") if "_static" not in p.relative_to(site).parts)


@cache
def _parse(page: Path) -> _PageParser:
    parser = _PageParser()
    parser.feed(page.read_text(encoding="utf-8", errors="replace"))
    return parser


def _target_file(site: Path, page: Path, path: str) -> Path | None:
    target = (page.parent / unquote(path)).resolve() if path else page
    if target.is_dir():
        target = target / "index.html"
    if not target.is_file() or not target.is_relative_to(site):
        return None
    return target


def check_page(site: Path, page: Path) -> list[str]:
    """Problems of one page, each naming the page, the tag and the reference."""
    problems = []
    name = page.relative_to(site).as_posix()
    for tag, attribute, value, loads in _parse(page).refs:
        where = f"{name}: <{tag} {attribute}={value!r}>"
        parts = urlsplit(value)
        if parts.scheme in SCHEMES_NOT_CHECKED:
            continue
        if parts.scheme or parts.netloc:
            if loads:
                problems.append(f"{where} loads from another site (the site must work offline)")
            continue
        if parts.path.startswith("/"):
            problems.append(f"{where} is absolute; the site must work from any folder")
            continue
        target = _target_file(site, page, parts.path)
        if target is None:
            problems.append(f"{where} names no file of the site")
        elif parts.fragment and target.suffix == ".html":
            if unquote(parts.fragment) not in _parse(target).ids:
                problems.append(f"{where}: no id {parts.fragment!r} in {target.name}")
    return problems


def check_site(site: Path) -> list[str]:
    """Problems of every page under `site` (empty when every link and asset resolves)."""
    site = site.resolve()
    pages = _pages(site)
    if not pages:
        return [f"no HTML pages under {site}"]
    _parse.cache_clear()
    return [problem for page in pages for problem in check_page(site, page)]


def site_images(site: Path) -> list[Image]:
    """Every `<img>` of every page under `site`, in page order."""
    site = site.resolve()
    _parse.cache_clear()
    return [
        Image(page.relative_to(site).as_posix(), src, alt)
        for page in _pages(site)
        for src, alt in _parse(page).images
    ]


def undescribed_images(site: Path) -> list[Image]:
    """The images under `site` whose alt text is missing, empty or a file path."""
    return [image for image in site_images(site) if not image.described()]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("site", type=Path, help="the folder of the built HTML")
    args = parser.parse_args(argv)
    problems = check_site(args.site)
    for problem in problems:
        print(problem, file=sys.stderr)
    print(f"links: {len(_pages(args.site.resolve()))} pages checked, {len(problems)} problems")
    images = site_images(args.site)
    undescribed = [image for image in images if not image.described()]
    for image in undescribed:
        print(f"{image.page}: <img src={image.src!r}> has no description", file=sys.stderr)
    print(f"figures: {len(images)} images, {len(undescribed)} without a description")
    return 1 if problems or undescribed else 0


if __name__ == "__main__":
    sys.exit(main())
