"""Take the README's picture of the dev UI's flow panel (docs/flow-panel.png).

    python tools/flow_screenshot.py

Serves ``python -m minagent serve --demo`` in a process of its own, opens the page in
Debian's headless Chromium (``/usr/bin/chromium``, driven by Playwright for Python, every
request outside the server blocked), asks the demo agent ``WeatherBot`` about the
weather (two tool calls) and saves the flow panel as a PNG. The picture is ours: the
page, the agent and the run are this project's.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.hosting._served import served_process  # noqa: E402

OUT = ROOT / "docs" / "flow-panel.png"
CHROMIUM = "/usr/bin/chromium"


def main() -> int:
    from playwright.sync_api import sync_playwright

    with served_process("--demo") as served, sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
        )
        try:
            context = browser.new_context(
                viewport={"width": 1100, "height": 760}, color_scheme="light"
            )
            origin = served.base

            def route(route: object) -> None:
                url = route.request.url  # type: ignore[attr-defined]
                if url == origin or url.startswith(origin + "/"):
                    route.continue_()  # type: ignore[attr-defined]
                else:
                    route.abort()  # type: ignore[attr-defined]

            context.route("**/*", route)
            page = context.new_page()
            page.goto(origin + "/")
            page.wait_for_selector("body[data-ready='true']")
            page.fill("#prompt", "What is the weather in Paris?")
            page.press("#prompt", "Enter")
            page.wait_for_selector(".message.assistant")
            page.wait_for_selector("#send:not([disabled])")
            page.wait_for_selector("body[data-status='idle']")
            OUT.parent.mkdir(exist_ok=True)
            page.locator(".flow").screenshot(path=str(OUT))
        finally:
            browser.close()
    print(f"{OUT.relative_to(ROOT)}: {OUT.stat().st_size} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
