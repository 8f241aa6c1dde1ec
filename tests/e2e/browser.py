"""A real headless Chromium (Debian's package: `make setup` installs it where it is missing) driven by Playwright, for
the console's tests: pages that fail on any script error, and the checks a person's eyes and keyboard make (WCAG AA
contrast of every visible text, a visible focus on each control the Tab key reaches, no sideways scrolling)."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from playwright.sync_api import BrowserContext, ConsoleMessage, Page, sync_playwright

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# Headless, and nothing of its own on the network: no QUIC, no first-run, background, component or sync traffic.
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}
# The docs' screenshots are refreshed on purpose (`make screenshots`); a test run writes its own where it leaves the
# clone's tracked files as they were.
SCREENSHOTS = Path(os.environ.get("GPUPILOT_SCREENSHOTS") or Path(tempfile.gettempdir()) / "gpupilot-console-screens")


@contextmanager
def chromium() -> Iterator[BrowserContext]:
    """A browser with an empty profile of its own, closed at the end."""
    with tempfile.TemporaryDirectory(prefix="console-browser-") as profile, sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            profile, executable_path=CHROMIUM, headless=True, args=CHROMIUM_FLAGS, viewport=DESKTOP
        )
        context.set_default_timeout(30_000)
        try:
            yield context
        finally:
            context.close()


class WatchedPage:
    """A tab whose script errors (uncaught exceptions, console errors: a refused policy, a failed load) are kept."""

    def __init__(self, context: BrowserContext) -> None:
        self.page: Page = context.new_page()
        self.errors: list[str] = []
        self.page.on("pageerror", lambda error: self.errors.append(f"uncaught: {error}"))
        self.page.on("console", self._console)

    def _console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.errors.append(f"console: {message.text}")

    def screenshot(self, name: str) -> Path:
        """The page as a person sees it, whole (docs/console.md shows them, from `make screenshots`)."""
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        path = SCREENSHOTS / f"{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path


# Each visible text's colour against the background it is drawn on (translucent layers blended down to the page's
# white), by WCAG 2's relative luminance; large text (24 px, or 18.66 px bold) needs 3:1, the rest 4.5:1.
CONTRAST_SCRIPT = """() => {
  const parse = (colour) => {
    const parts = (colour.match(/rgba?\\(([^)]+)\\)/) || [null, "0 0 0 0"])[1].split(/[\\s,\\/]+/).filter(Boolean);
    const [r, g, b, a] = parts.map(Number);
    return { r, g, b, a: parts.length > 3 ? a : 1 };
  };
  const blend = (top, under) => ({
    r: top.r * top.a + under.r * (1 - top.a), g: top.g * top.a + under.g * (1 - top.a),
    b: top.b * top.a + under.b * (1 - top.a), a: 1 });
  const background = (element) => {
    const layers = [];
    for (let e = element; e; e = e.parentElement) {
      const colour = parse(getComputedStyle(e).backgroundColor);
      if (colour.a > 0) layers.push(colour);
      if (colour.a >= 1) break;
    }
    return layers.reverse().reduce((under, top) => blend(top, under), { r: 255, g: 255, b: 255, a: 1 });
  };
  const luminance = ({ r, g, b }) => {
    const linear = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b);
  };
  const failures = [];
  const texts = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (texts.nextNode()) {
    const element = texts.currentNode.parentElement;
    const rect = element.getBoundingClientRect();
    if (!texts.currentNode.textContent.trim() || !element.getClientRects().length || rect.right <= 0) continue;
    const style = getComputedStyle(element);
    if (style.visibility === "hidden" || Number(style.opacity) === 0) continue;
    const under = background(element);
    const over = blend(parse(style.color), under);
    const [light, dark] = [luminance(over), luminance(under)].sort((x, y) => y - x);
    const ratio = (light + 0.05) / (dark + 0.05);
    const size = parseFloat(style.fontSize);
    const large = size >= 24 || (Number(style.fontWeight) >= 700 && size >= 18.66);
    if (ratio < (large ? 3 : 4.5)) {
      const text = texts.currentNode.textContent.trim().slice(0, 40);
      const ground = `rgb(${[under.r, under.g, under.b].map(Math.round).join(", ")})`;
      failures.push(`${ratio.toFixed(2)}:1 "${text}" (${style.color} on ${ground})`);
    }
  }
  return failures;
}"""

# What has the keyboard's focus, and whether a person can see where it is (an outline or a ring).
FOCUSED_SCRIPT = """() => {
  const element = document.activeElement;
  if (!element || element === document.body) return null;
  const style = getComputedStyle(element);
  const visible = (style.outlineStyle !== "none" && parseFloat(style.outlineWidth) > 0) || style.boxShadow !== "none";
  const text = element.innerText || element.value || element.getAttribute("aria-label") || "";
  return { tag: element.tagName.toLowerCase(), text: text.trim().slice(0, 60), id: element.id,
           href: element.getAttribute("href"), visible };
}"""


def contrast_failures(page: Page) -> list[str]:
    """Every visible text under WCAG AA contrast, with its ratio and colours."""
    return list(page.evaluate(CONTRAST_SCRIPT))


def tab_through(page: Page, presses: int) -> list[dict[str, Any]]:
    """The controls the Tab key reaches from the top of the page, in order (each with whether its focus shows)."""
    page.evaluate("() => { document.activeElement?.blur(); window.scrollTo(0, 0); }")
    reached = []
    for _ in range(presses):
        page.keyboard.press("Tab")
        focused = page.evaluate(FOCUSED_SCRIPT)
        if focused:
            reached.append(focused)
    return reached


def tab_to(page: Page, wanted: Callable[[dict[str, Any]], bool], presses: int = 40) -> dict[str, Any]:
    """Press Tab from the top of the page until the focused control is the one `wanted`; that control."""
    page.evaluate("() => { document.activeElement?.blur(); window.scrollTo(0, 0); }")
    for _ in range(presses):
        page.keyboard.press("Tab")
        focused = page.evaluate(FOCUSED_SCRIPT)
        if focused and wanted(focused):
            return dict(focused)
    raise AssertionError(f"no control the Tab key reached in {presses} presses is the one wanted")


def sideways_overflow(page: Page) -> int:
    """How many pixels the page is wider than the window (tables scroll inside their own box; the page must not)."""
    return int(page.evaluate("() => document.documentElement.scrollWidth - window.innerWidth"))
