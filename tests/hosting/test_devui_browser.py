"""The dev UI in a real browser: Debian's headless Chromium driven by Playwright for
Python against ``python -m minagent serve --demo`` in a process of its own, with every
request outside the server blocked (spec/hosting.md HS-215, HS-221 .. HS-227). Each
test leaves a screenshot under ``test-artifacts/``."""

from __future__ import annotations

import itertools
import json
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from ._served import JOURNAL, ROOT, Served, served_process

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = ROOT / "test-artifacts"

pytestmark = pytest.mark.skipif(
    not CHROMIUM.exists(),
    reason="Debian's chromium is not installed (/usr/bin/chromium)",
)

# what the demo agent answers, whatever it is asked (HS-133)
DEMO_ANSWER = "In Paris it is 18 °C, which is 64.4 °F."


@pytest.fixture(scope="module")
def server() -> Iterator[Served]:
    with tempfile.TemporaryDirectory() as folder:
        journal = Path(folder) / "journal"
        journal.touch()
        with served_process(
            "--demo",
            "tests.hosting._served:approving",
            "tests.hosting._served:slow",
            "tests.hosting._served:asking",
            env={
                "MINAGENT_TEST_TICK": "0.05",
                "MINAGENT_TEST_TICKS": "2000",
                JOURNAL: str(journal),
            },
        ) as served:
            served.journal = journal  # type: ignore[attr-defined]
            yield served


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        # never a downloaded browser: the system's, with nothing reaching outside
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM),
            headless=True,
            args=[
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--no-first-run",
            ],
        )
        try:
            yield chromium
        finally:
            chromium.close()


class Tab:
    """One page in a fresh browser context whose requests outside the server are
    blocked and recorded."""

    def __init__(self, browser: Any, server: Served, width: int = 1280) -> None:
        self.server = server
        self.context = browser.new_context(viewport={"width": width, "height": 900})
        self.outside: list[str] = []
        self.requests: list[str] = []
        origin = server.base

        def route(route: Any) -> None:
            url = route.request.url
            self.requests.append(url)
            if url == origin or url.startswith(origin + "/"):
                route.continue_()
            else:
                self.outside.append(url)
                route.abort()

        self.context.route("**/*", route)
        self.page = self.context.new_page()
        self.console_errors: list[str] = []
        self.page.on(
            "console",
            lambda m: self.console_errors.append(m.text) if m.type == "error" else None,
        )

    def open(self, fragment: str = "") -> Any:
        self.page.goto(self.server.base + "/" + fragment)
        self.page.wait_for_selector("body[data-ready='true']")
        return self.page

    def pick(self, agent: str) -> None:
        self.page.select_option("#agent", agent)
        self.page.wait_for_function(
            "name => decodeURIComponent(location.hash).includes('agent=' + name)",
            arg=agent,
        )
        self.page.wait_for_selector("body[data-ready='true']")

    def new_thread(self) -> None:
        self.page.click("#new-thread")
        self.page.wait_for_selector("body[data-ready='true']")

    def send(self, text: str) -> None:
        self.page.fill("#prompt", text)
        self.page.press("#prompt", "Enter")

    def idle(self) -> None:
        self.page.wait_for_selector("#send:not([disabled])")
        self.page.wait_for_selector("body:not([data-status='running'])")

    def shot(self, name: str) -> None:
        ARTIFACTS.mkdir(exist_ok=True)
        self.page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=True)

    def close(self) -> None:
        self.context.close()


@pytest.fixture
def tab(browser: Any, server: Served, request: pytest.FixtureRequest) -> Iterator[Tab]:
    opened = Tab(browser, server)
    try:
        yield opened
        opened.shot(request.node.name)
        assert opened.outside == [], opened.outside
    finally:
        opened.close()


def texts(page: Any, selector: str) -> list[str]:
    return [t.strip() for t in page.locator(selector).all_inner_texts()]


def test_chat_tool_cards_flow_panel_and_reload(tab: Tab) -> None:
    """HS-221, HS-222, HS-224: a prompt to the demo agent streams its answer; each tool
    call is a card with its arguments and result; the flow panel lists the run's steps
    by layer with durations; a reload shows the thread's history again."""
    page = tab.open()
    tab.pick("WeatherBot")
    tab.new_thread()
    tab.send("What is the weather in Paris?")
    page.wait_for_selector(f".message.assistant:has-text('{DEMO_ANSWER}')")
    tab.idle()
    assert texts(page, ".message.user .text") == ["What is the weather in Paris?"]
    cards = page.locator("article.tool")
    assert cards.count() == 2
    assert texts(page, "article.tool strong") == ["get_weather", "to_fahrenheit"]
    assert texts(page, "article.tool .status") == ["done", "done"]
    # collapsible JSON: closed until opened, indented when shown
    first = cards.nth(0)
    first.locator("summary", has_text="Arguments").click()
    assert first.locator("details[open] pre").inner_text() == '{\n  "city": "Paris"\n}'
    first.locator("summary", has_text="Result").click()
    assert '"celsius": 18' in first.locator("details[open] pre").nth(1).inner_text()
    # the flow panel: one run, its steps in order, each with a layer and a duration
    run = page.locator("#runs > li.run")
    assert run.count() == 1
    assert re.fullmatch(
        r"Run 1 — success, [\d.]+ (ms|s)", run.locator("h3").inner_text()
    )
    steps = [
        (li.get_attribute("data-layer"), li.locator(".name").inner_text())
        for li in run.locator(".steps > li").all()
    ]
    # the loop's decisions (HS-237) where they were taken
    assert steps == [
        ("agent", "agent"),
        ("chat", "model call 1"),
        ("loop", "calls → run batch"),
        ("function", "tool get_weather (c1)"),
        ("loop", "ran → call model"),
        ("chat", "model call 2"),
        ("loop", "calls → run batch"),
        ("function", "tool to_fahrenheit (c2)"),
        ("loop", "ran → call model"),
        ("chat", "model call 3"),
        ("loop", "answered → finish"),
    ]
    for duration in texts(page, "#runs .steps .dur"):
        assert re.fullmatch(r"[\d.]+ (ms|s)", duration), duration
    assert run.locator(".usage").inner_text()
    page.locator(".flow").screenshot(path=str(_artifact("flow-panel")))
    # reload: the same thread, from the store
    hash_before = page.evaluate("location.hash")
    page.reload()
    page.wait_for_selector("body[data-ready='true']")
    assert page.evaluate("location.hash") == hash_before
    assert texts(page, ".message .text") == [
        "What is the weather in Paris?",
        DEMO_ANSWER,
    ]
    assert texts(page, "article.tool .status") == ["done", "done"]
    assert (
        "64.4"
        in page.locator("article.tool").nth(1).locator("pre").nth(1).text_content()
    )
    assert tab.console_errors == []


def _artifact(name: str) -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS / f"{name}.png"


def test_streamed_text_and_stop(tab: Tab, server: Served) -> None:
    """HS-221: text shows as it streams, in order, while the run goes on; Stop aborts
    the request, which cancels the run on the server (HS-125)."""
    page = tab.open()
    tab.pick("slow")
    tab.new_thread()
    page.evaluate(
        """() => {
            window.seen = [];
            new MutationObserver(() => {
                const last = document.querySelector('.message.assistant .text');
                if (last && window.seen.at(-1) !== last.textContent)
                    window.seen.push(last.textContent);
            }).observe(document.getElementById('timeline'),
                       {subtree: true, childList: true, characterData: true});
        }"""
    )
    tab.send("count")
    page.wait_for_selector(".message.assistant:has-text('tick 3 ')")
    assert page.locator("#stop").is_enabled()
    # the run goes on for minutes: the text keeps growing while it runs
    page.wait_for_function("() => window.seen.length >= 3")
    assert page.locator("#stop").is_enabled()
    seen = page.evaluate("window.seen")
    for earlier, later in itertools.pairwise(seen):
        assert later.startswith(earlier)
    assert seen[-1].startswith("tick 0 tick 1 tick 2 tick 3 ")
    page.click("#stop")
    page.wait_for_selector("body[data-status='stopped']")
    assert page.locator("#stop").is_disabled()
    assert re.fullmatch(
        r"Run 1 — stopped, [\d.]+ (ms|s)", page.locator("#runs h3").inner_text()
    )
    assert page.get_by_role("status").text_content() == "stopped"
    journal: Path = server.journal  # type: ignore[attr-defined]
    for _ in range(600):
        if "cancelled" in journal.read_text():
            break
        page.wait_for_timeout(100)
    assert journal.read_text().splitlines()[-2:] == ["started", "cancelled"]


def test_approve_and_reject(tab: Tab) -> None:
    """HS-222, HS-223, HS-224, HS-226: a call that needs approval shows Approve and
    Reject on its card; approving (from the keyboard) runs it and the answer streams
    in, the flow panel showing its usage and the agent's middleware by layer;
    rejecting gives the rejection as its result; the wait is announced in the status
    region; a reload shows both, and switching agents opens each one's own thread."""
    page = tab.open()
    tab.pick("approving")
    tab.new_thread()
    tab.send("a.txt")
    approve = page.get_by_role("button", name="Approve the call of delete_file")
    approve.wait_for()
    assert texts(page, "article.tool .status") == ["awaiting approval"]
    assert (
        page.get_by_role("button", name="Reject the call of delete_file").count() == 1
    )
    assert page.get_by_role("status").text_content() == "waiting for approval"
    approve.focus()
    page.keyboard.press("Enter")
    page.wait_for_selector(".message.assistant:has-text('result: deleted a.txt')")
    tab.idle()
    assert texts(page, "article.tool .status") == ["done"]
    # the agent's middleware by layer, named in the flow panel
    assert texts(page, "#layers dd") == ["Timing", "none", "audit_calls"]
    # the answering run's usage (the approving model reports 7 in, 3 out)
    assert texts(page, "#runs .usage")[-1] == "input 7 · output 3 · total 10 tokens"
    tab.send("b.txt")
    reject = page.get_by_role("button", name="Reject the call of delete_file")
    reject.wait_for()
    reject.click()
    page.wait_for_selector(".message.assistant:has-text('rejected by user')")
    tab.idle()
    assert texts(page, "article.tool .status") == ["done", "rejected"]
    assert page.locator("button.approve").count() == 0
    thread = page.evaluate("location.hash")
    # another agent, then back: each agent keeps its own thread
    tab.pick("WeatherBot")
    assert page.evaluate("location.hash") != thread
    tab.pick("approving")
    assert page.evaluate("location.hash") == thread
    page.reload()
    page.wait_for_selector("body[data-ready='true']")
    assert texts(page, ".message.user .text") == ["a.txt", "b.txt"]
    assert texts(page, "article.tool .status") == ["done", "error"]
    results = page.locator("article.tool details pre")
    # closed details: their text is there, not rendered
    assert "deleted a.txt" in (results.nth(1).text_content() or "")
    assert "rejected" in (results.nth(3).text_content() or "")


def test_an_open_approval_survives_a_reload_and_refusals_are_shown(tab: Tab) -> None:
    """HS-224, HS-225: an approval left open is still offered after a reload; a new
    prompt while it is open is refused by the server (HS-90) and its message is shown
    in the alert region, not a blank page."""
    page = tab.open()
    tab.pick("approving")
    tab.new_thread()
    tab.send("c.txt")
    page.get_by_role("button", name="Approve the call of delete_file").wait_for()
    tab.idle()
    page.reload()
    page.wait_for_selector("body[data-ready='true']")
    assert texts(page, "article.tool .status") == ["awaiting approval"]
    tab.send("something else")
    alert = page.get_by_role("alert")
    alert.wait_for()
    page.wait_for_function("() => document.getElementById('error').textContent !== ''")
    assert "interrupt" in alert.inner_text()
    assert page.locator("body").get_attribute("data-status") == "error"
    page.get_by_role("button", name="Approve the call of delete_file").click()
    page.wait_for_selector(".message.assistant:has-text('result: deleted c.txt')")
    assert alert.is_hidden()


def test_the_threads_list(tab: Tab) -> None:
    """HS-227: the agent's threads, the last used first, titled by their first prompt;
    choosing one shows its history from the store."""
    page = tab.open()
    tab.pick("approving")
    tab.new_thread()
    for prompt in ("first.txt", "second.txt"):
        if prompt == "second.txt":
            tab.new_thread()
        tab.send(prompt)
        page.get_by_role("button", name="Approve the call of delete_file").wait_for()
        tab.idle()
    threads = page.locator("#threads button")
    # the store lists the module's other tests' threads of this agent after these two
    assert threads.all_inner_texts()[:2] == ["second.txt", "first.txt"]
    assert threads.nth(0).get_attribute("aria-current") == "true"
    assert threads.nth(1).get_attribute("aria-current") == "false"
    first_id = threads.nth(1).get_attribute("data-thread")
    threads.nth(1).click()
    page.wait_for_selector("body[data-ready='true']")
    page.wait_for_selector(".message.user:has-text('first.txt')")
    assert texts(page, ".message.user .text") == ["first.txt"]
    assert f"thread={first_id}" in page.evaluate("location.hash")
    assert page.locator("#threads button[aria-current='true']").inner_text() == (
        "first.txt"
    )
    # another agent has its own list
    tab.pick("WeatherBot")
    assert "first.txt" not in page.locator("#threads").inner_text()


@pytest.mark.parametrize("width", [375, 1440])
def test_no_horizontal_overflow(browser: Any, server: Served, width: int) -> None:
    """HS-226: at 375 and 1,440 px wide nothing overflows horizontally, with a long
    unbroken prompt and tool cards opened."""
    tab = Tab(browser, server, width=width)
    try:
        page = tab.open()
        tab.pick("WeatherBot")
        tab.new_thread()
        tab.send("x" * 400)
        page.wait_for_selector(f".message.assistant:has-text('{DEMO_ANSWER}')")
        tab.idle()
        for summary in page.locator("article.tool summary").all():
            summary.click()
        overflow = page.evaluate(
            """() => {
                const root = document.documentElement;
                const wide = [...document.querySelectorAll('body *')]
                    .filter(e => e.getBoundingClientRect().right > root.clientWidth + 0.5)
                    .map(e => e.tagName + '.' + e.className);
                return {scroll: root.scrollWidth, client: root.clientWidth,
                        body: document.body.scrollWidth, wide};
            }"""
        )
        assert overflow["client"] == width
        assert overflow["scroll"] <= overflow["client"], overflow
        assert overflow["body"] <= overflow["client"], overflow
        assert overflow["wide"] == [], overflow
        tab.shot(f"layout-{width}")
        assert tab.outside == []
    finally:
        tab.close()


def test_labels_keyboard_focus_and_colour_schemes(tab: Tab) -> None:
    """HS-226: every control is labelled; Tab reaches the controls in order and the
    focused one has a visible outline; light and dark follow the system's preference."""
    page = tab.open()
    unlabelled = page.evaluate(
        """() => [...document.querySelectorAll('button, select, textarea, input')]
            .filter(e => !(e.labels && e.labels.length) && !e.getAttribute('aria-label')
                         && !e.textContent.trim())
            .map(e => e.id || e.outerHTML)"""
    )
    assert unlabelled == []
    assert page.get_by_label("Agent").count() == 1
    assert page.get_by_label("Message").count() == 1
    order = []
    for _ in range(4):
        page.keyboard.press("Tab")
        order.append(page.evaluate("document.activeElement.id"))
        outline = page.evaluate("getComputedStyle(document.activeElement).outlineStyle")
        assert outline != "none", order[-1]
    assert order == ["agent", "new-thread", "prompt", "send"]
    colours = {}
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        colours[scheme] = page.evaluate(
            "[getComputedStyle(document.body).backgroundColor,"
            " getComputedStyle(document.body).color]"
        )
    assert colours["light"] == ["rgb(255, 255, 255)", "rgb(26, 26, 26)"]
    assert colours["dark"] == ["rgb(22, 24, 28)", "rgb(232, 234, 237)"]


def test_nothing_outside_the_server_is_requested(tab: Tab, server: Served) -> None:
    """HS-215, HS-212: the page loads and runs with the network blocked except the
    server; the blocking itself is live (a request elsewhere is caught), and the page's
    policy forbids such requests on its own."""
    page = tab.open()
    tab.pick("WeatherBot")
    tab.send("hello")
    page.wait_for_selector(f".message.assistant:has-text('{DEMO_ANSWER}')")
    tab.idle()
    assert tab.outside == []
    assert tab.requests, "the route saw the page's requests"
    assert all(url.startswith(server.base + "/") for url in tab.requests)
    paths = {url[len(server.base) :].split("#")[0] for url in tab.requests}
    assert {"/", "/ui/app.css", "/ui/app.js", "/ui/state.js", "/ui/api/agents"} <= paths
    # the page's policy refuses another origin before any request is made
    refused = page.evaluate(
        """() => fetch('http://198.51.100.7/x').then(() => 'fetched', e => e.name)"""
    )
    assert refused == "TypeError"
    assert tab.outside == []
    # a page without the policy is stopped by the route instead: the blocking is live
    other = tab.context.new_page()
    other.evaluate("() => fetch('http://198.51.100.7/y').catch(() => null)")
    other.close()
    assert tab.outside == ["http://198.51.100.7/y"]
    tab.outside.clear()


def test_a_client_tool_answered_in_the_page_and_the_shared_state(tab: Tab) -> None:
    """HS-234, HS-235: every run declares the page's client tool; the model's call of
    it shows as a pending card with a labelled answer field, also after a reload; the
    typed answer (Enter, from the keyboard) goes back as the call's `tool` message and
    the run continues;
    the tool that keeps it in the thread's shared state is shown as collapsible JSON,
    updated by the next run's delta."""
    page = tab.open()
    tab.pick("asking")
    tab.new_thread()
    bodies: list[dict[str, Any]] = []
    page.on(
        "request",
        lambda r: (
            bodies.append(json.loads(r.post_data or "{}"))
            if r.method == "POST" and "/agui/" in r.url
            else None
        ),
    )
    assert page.locator("#shared").is_hidden()
    tab.send("pick a colour")
    field = page.get_by_label("Answer to ask_user: Which colour?")
    field.wait_for()
    tab.idle()
    assert texts(page, "article.tool .status") == ["pending"]
    assert page.locator("#shared").is_hidden()
    # a reload shows the call pending again, from the thread's history
    page.reload()
    page.wait_for_selector("body[data-ready='true']")
    assert texts(page, "article.tool .status") == ["pending"]
    field = page.get_by_label("Answer to ask_user: Which colour?")
    field.fill("teal")
    field.press("Enter")
    page.wait_for_selector(".message.assistant:has-text('kept teal')")
    tab.idle()
    assert texts(page, "article.tool strong") == ["ask_user", "keep_colour"]
    assert texts(page, "article.tool .status") == ["answered", "done"]
    assert page.locator("form.answer").count() == 0
    assert [t["name"] for t in bodies[0]["tools"]] == ["ask_user"]
    assert bodies[0]["tools"][0]["parameters"]["required"] == ["question"]
    answer = bodies[1]["messages"]
    assert [(m["role"], m["toolCallId"], m["content"]) for m in answer] == [
        ("tool", "ask-1", "teal")
    ]
    shared = page.locator("#shared")
    assert shared.is_visible()
    shared.locator("summary", has_text="Shared state").click()
    assert json.loads(shared.locator("pre").inner_text()) == {
        "colours": ["teal"],
        "last": {"colour": "teal"},
    }
    # the next round's delta updates what is shown (the block stays open)
    tab.send("another")
    field = page.get_by_label("Answer to ask_user: Which colour?")
    field.wait_for()
    tab.idle()
    field.fill("navy")
    page.get_by_role("button", name="Answer the call of ask_user").click()
    page.wait_for_selector(".message.assistant:has-text('kept navy')")
    tab.idle()
    assert json.loads(shared.locator("pre").inner_text()) == {
        "colours": ["teal", "navy"],
        "last": {"colour": "navy"},
    }
    assert tab.console_errors == []


# WCAG 2's contrast ratio of every visible text against its effective background: the
# text's colour over the first opaque background of it and its ancestors (translucent
# ones composited on the way), large text being 24 px, or 18.67 px and bold
CONTRAST = """() => {
    const rgba = (c) => {
        const m = c.match(/rgba?\\(([^)]*)\\)/);
        if (!m) return [0, 0, 0, 0];
        const p = m[1].split(/[\\s,\\/]+/).filter(Boolean).map(Number);
        return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
    };
    const over = (top, bottom) => [0, 1, 2].map(
        (i) => top[i] * top[3] + bottom[i] * (1 - top[3]));
    const background = (node) => {
        const layers = [];
        for (let e = node; e; e = e.parentElement) {
            const c = rgba(getComputedStyle(e).backgroundColor);
            if (c[3] > 0) layers.push(c);
            if (c[3] >= 1) break;
        }
        let colour = [255, 255, 255];
        for (const layer of layers.reverse()) colour = over(layer, colour);
        return colour;
    };
    const luminance = (rgb) => {
        const [r, g, b] = rgb.map((v) => {
            v /= 255;
            return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
        });
        return 0.2126 * r + 0.7152 * g + 0.0722 * b;
    };
    const hidden = (e) => e.closest('.visually-hidden, [hidden]') !== null;
    const found = [];
    for (const e of document.querySelectorAll('body *')) {
        const own = [...e.childNodes].some(
            (n) => n.nodeType === 3 && n.textContent.trim() !== '');
        const control = e.matches('input, textarea, select, button');
        if (!own && !control) continue;
        if (!e.checkVisibility() || e.getClientRects().length === 0 || hidden(e)) continue;
        if (e.closest(':disabled')) continue;
        const style = getComputedStyle(e);
        const back = background(e);
        const fore = over(rgba(style.color), back);
        const [hi, lo] = [luminance(fore), luminance(back)].sort((a, b) => b - a);
        const ratio = (hi + 0.05) / (lo + 0.05);
        const size = parseFloat(style.fontSize);
        const large = size >= 24 || (size >= 18.66 && Number(style.fontWeight) >= 700);
        found.push({
            what: e.tagName.toLowerCase() + (e.className ? '.' + e.className : '')
                + ' ' + (e.textContent || '').trim().slice(0, 30),
            ratio: Math.round(ratio * 100) / 100,
            needed: large ? 3 : 4.5,
            colour: style.color,
        });
    }
    return found;
}"""


def _contrast(page: Any) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = page.evaluate(CONTRAST)
    assert len(found) > 20, found
    return found


def test_contrast_is_aa_in_light_and_dark(tab: Tab) -> None:
    """HS-236: in light and dark, every visible text (controls, messages, tool cards
    with a pending answer field and an open approval, the shared state, the flow panel
    and the alert) has a contrast ratio of at least 4.5 against its effective
    background, 3 when large."""
    page = tab.open()
    tab.pick("asking")
    tab.new_thread()
    tab.send("pick a colour")
    field = page.get_by_label("Answer to ask_user: Which colour?")
    field.wait_for()
    tab.idle()
    field.fill("teal")
    field.press("Enter")
    page.wait_for_selector(".message.assistant:has-text('kept teal')")
    tab.idle()
    tab.send("another")
    page.get_by_label("Answer to ask_user: Which colour?").wait_for()
    tab.idle()
    for summary in page.locator("summary").all():
        summary.click()
    views = {}
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        views[f"asking {scheme}"] = _contrast(page)
        tab.shot(f"contrast-asking-{scheme}")
    # an open approval and a refusal in the alert region
    tab.pick("approving")
    tab.new_thread()
    tab.send("d.txt")
    page.get_by_role("button", name="Approve the call of delete_file").wait_for()
    tab.idle()
    tab.send("something else")
    page.wait_for_function("() => document.getElementById('error').textContent !== ''")
    tab.idle()
    for scheme in ("light", "dark"):
        page.emulate_media(color_scheme=scheme)
        views[f"approving {scheme}"] = _contrast(page)
        tab.shot(f"contrast-approving-{scheme}")
    failing = {
        view: [f for f in found if f["ratio"] < f["needed"]]
        for view, found in views.items()
    }
    assert failing == {view: [] for view in views}, failing
    # what was measured includes each part of the page
    measured = " ".join(f["what"] for found in views.values() for f in found)
    parts = ("span.layer", "span.dur", "strong", "label", "button.approve", "div.error")
    for part in (*parts, "pre", "textarea", "select"):
        assert part in measured, part


def test_the_flow_panel_in_detail(tab: Tab) -> None:
    """HS-237, HS-98: the flow panel shows each middleware of the agent under the step
    it crossed, with its own time, and the loop's decisions, the approval's pause
    included, in the order they were taken."""
    page = tab.open()
    tab.pick("approving")
    tab.new_thread()
    tab.send("e.txt")
    page.get_by_role("button", name="Approve the call of delete_file").click()
    page.wait_for_selector(".message.assistant:has-text('result: deleted e.txt')")
    tab.idle()
    runs = page.locator("#runs > li.run")
    assert runs.count() == 2

    def shown(run: Any) -> list[tuple[str | None, str, list[str]]]:
        return [
            (
                li.get_attribute("data-layer"),
                li.locator(":scope > .name").inner_text(),
                [
                    m.get_attribute("data-middleware") or ""
                    for m in li.locator(".mw li").all()
                ],
            )
            for li in run.locator(".steps > li").all()
        ]

    assert shown(runs.nth(0)) == [
        ("agent", "agent", ["Timing"]),
        ("chat", "model call 1", []),
        ("loop", "approval → pause", []),
    ]
    assert shown(runs.nth(1)) == [
        ("agent", "agent", ["Timing"]),
        ("function", "tool delete_file (del-1)", ["audit_calls"]),
        ("loop", "ran → call model", []),
        ("chat", "model call 1", []),
        ("loop", "answered → finish", []),
    ]
    for text in texts(page, "#runs .mw .dur"):
        assert re.fullmatch(r"\d+(\.\d\d)? ms", text), text
    assert texts(page, "#runs .mw .name") == ["Timing", "Timing", "audit_calls"]
    page.locator(".flow").screenshot(path=str(_artifact("flow-panel-detail")))
    assert tab.console_errors == []


def test_a_thread_made_elsewhere_is_listed(tab: Tab, server: Served) -> None:
    """HS-227, HS-228: a thread made through the API, not the page, is in the sessions
    list once the page loads, titled by its first prompt; choosing it shows its
    history."""
    page = tab.open()
    tab.pick("WeatherBot")
    body = {
        "threadId": "made-through-the-api",
        "runId": "api-run",
        "messages": [{"id": "api-m", "role": "user", "content": "Asked elsewhere"}],
    }
    answer = httpx.post(server.base + "/agui/WeatherBot", json=body, timeout=60)
    assert '"RUN_FINISHED"' in answer.text
    assert "Asked elsewhere" not in page.locator("#threads").inner_text()
    page.reload()
    page.wait_for_selector("body[data-ready='true']")
    listed = page.locator("#threads button[data-thread='made-through-the-api']")
    listed.wait_for()
    assert listed.inner_text() == "Asked elsewhere"
    listed.click()
    page.wait_for_selector(".message.user:has-text('Asked elsewhere')")
    assert texts(page, ".message .text") == ["Asked elsewhere", DEMO_ANSWER]
    assert "thread=made-through-the-api" in page.evaluate("location.hash")


def test_a_run_downloads_as_mermaid(tab: Tab) -> None:
    """HS-229: each run of the flow panel has a labelled Mermaid button that downloads
    the run as a Mermaid sequence diagram: the demo's model calls and tool calls, every
    call arrow with its return."""
    page = tab.open()
    tab.pick("WeatherBot")
    tab.new_thread()
    tab.send("Paris?")
    page.wait_for_selector(f".message.assistant:has-text('{DEMO_ANSWER}')")
    tab.idle()
    button = page.get_by_role("button", name="Download run 1 as Mermaid")
    with page.expect_download() as caught:
        button.click()
    download = caught.value
    assert download.suggested_filename == "run-1.mmd"
    text = Path(download.path()).read_text(encoding="utf-8")
    lines = text.splitlines()
    assert lines[0] == "sequenceDiagram"
    assert "    Caller->>AM: run() of WeatherBot" in lines
    assert "    A->>FM: get_weather [c1]" in lines
    assert "    A->>FM: to_fahrenheit [c2]" in lines
    assert sum(1 for line in lines if re.match(r" {4}\w+->>", line)) == 7
    assert sum(1 for line in lines if "-->>" in line) == 7
    assert re.fullmatch(r" {4}AM-->>Caller: AgentResponse.* \([\d.]+ m?s\)", lines[-1])
    assert tab.console_errors == []


@pytest.fixture(scope="module")
def token_server() -> Iterator[Served]:
    with served_process("--demo", "--token", TOKEN) as served:
        yield served


TOKEN = "browser-tok-7"


def test_a_server_with_a_token(browser: Any, token_server: Served) -> None:
    """HS-230: with a token the page loads, asks for the token in a labelled password
    field when the API answers 401, asks again when it is refused, then chats; the
    token is kept in sessionStorage only, never in the URL or the page."""
    tab = Tab(browser, token_server)
    try:
        page = tab.page
        page.goto(token_server.base + "/")
        field = page.get_by_label("Token")
        field.wait_for()
        assert field.get_attribute("type") == "password"
        assert "needs a token" in page.locator("#token-note").inner_text()
        assert page.evaluate("document.activeElement.id") == "token"
        field.fill("wrong-token")
        field.press("Enter")
        page.wait_for_selector("#token-note:has-text('refused')")
        field.fill(TOKEN)
        page.get_by_role("button", name="Use token").click()
        page.wait_for_selector("body[data-ready='true']")
        assert page.locator("#token-form").is_hidden()
        tab.pick("WeatherBot")
        tab.send("Paris?")
        page.wait_for_selector(f".message.assistant:has-text('{DEMO_ANSWER}')")
        tab.idle()
        stored = page.evaluate(
            "[sessionStorage.getItem('minagent-ui:token'),"
            " JSON.stringify(Object.assign({}, localStorage))]"
        )
        assert stored[0] == TOKEN
        assert TOKEN not in stored[1]
        assert TOKEN not in page.url
        assert TOKEN not in page.content()
        assert all(TOKEN not in url for url in tab.requests)
        # a reload in the same tab keeps the token: no question asked
        page.reload()
        page.wait_for_selector("body[data-ready='true']")
        assert page.locator("#token-form").is_hidden()
        assert texts(page, ".message.user .text") == ["Paris?"]
        tab.shot("test_a_server_with_a_token")
        assert tab.outside == []
        assert tab.console_errors == [] or all(
            "401" in error for error in tab.console_errors
        )
    finally:
        tab.close()
    log = token_server.stderr()
    assert "GET /ui/api/agents 401" in log
    assert TOKEN not in log
