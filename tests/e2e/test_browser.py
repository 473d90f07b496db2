"""End to end in a real browser: Playwright driving Debian's Chromium (headless) against the app
served by waitress on 127.0.0.1 with a random port, on the real engine (session `runtime`: real
index, real 0.5B reader). Few real answers on purpose: each costs ~10-30 s on 2 cores.

Screenshots and the measured page timings land in test-artifacts/ (git-ignored).
"""
from __future__ import annotations

import csv
import json
import re
import time
from pathlib import Path

import pytest

from ..conftest import SHORT_ANSWERS
from ..web_support import ADMIN_PASSWORD, build_app, running

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
ANSWER_TIMEOUT_MS = 300_000
QUESTION = "What are the four functions of the AI RMF Core?"  # a HIGH-risk list question: verified
PLAIN_TOPIC = "Who is the intended audience of SP 800-218A?"
PROMPT_TOPIC = "How should training data be protected?"
DIRECT_TOPIC = "Which documents can I ask about?"

# Records, in the page's own clock, when the question was submitted, when sources and the first
# token appeared, and how many token swaps happened (proves streaming, not one final render).
OBSERVER = """
() => {
  window.__t = {tokens: 0};
  const form = document.querySelector('#ask-form');
  form.addEventListener('submit', () => { window.__t = {tokens: 0, submit: performance.now()}; }, true);
  document.body.addEventListener('htmx:sseBeforeMessage', (e) => {
    const t = window.__t, name = e.detail.type;
    if (name === 'sources' && !t.sources) t.sources = performance.now();
    if (name === 'token') { t.tokens += 1; if (!t.first_token) t.first_token = performance.now(); }
    if (name === 'verdict') t.verdicts = (t.verdicts || 0) + 1;
    if (name === 'final') t.final = performance.now();
  });
}
"""


@pytest.fixture(scope="module")
def live_server(runtime, tmp_path_factory):
    from waitress import create_server

    # short answers, still checked: these tests are about the page, and the checks' marks show on it
    app = build_app(tmp_path_factory.mktemp("browser"), runtime.derived({"answer": SHORT_ANSWERS["answer"]}))
    with running(create_server(app, host="127.0.0.1", port=0, threads=16, channel_timeout=900)) as server:
        yield f"http://127.0.0.1:{server.effective_port}", app


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        pytest.skip("Chromium not installed: run scripts/install_browser.sh")
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=str(CHROMIUM), args=ARGS, headless=True)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def page(browser, live_server):
    base, _app = live_server
    context = browser.new_context(base_url=base, accept_downloads=True, viewport={"width": 1280, "height": 900})
    external: list[str] = []
    context.on("request", lambda r: external.append(r.url) if not r.url.startswith(base) else None)
    pg = context.new_page()
    pg.set_default_timeout(30_000)
    yield pg
    assert not external, f"the page made external requests: {external}"
    context.close()


def last_turn(page):
    return page.locator("#turns article.turn").last


def turn_count(page) -> int:
    return page.locator("#turns article.turn").count()


def wait_until(page, expression: str, timeout_ms: int = 30_000):
    """Poll a page expression from here. Playwright's wait_for_function evaluates its predicate with
    eval, which the site's Content-Security-Policy (no 'unsafe-eval') rightly blocks."""
    deadline = time.monotonic() + timeout_ms / 1000
    while not page.evaluate(expression):
        assert time.monotonic() < deadline, f"timed out waiting for {expression}"
        page.wait_for_timeout(100)


def wait_answered(page, before: int):
    """Wait for the new turn to appear, then for the stored message to replace the streaming one."""
    page.locator("#turns article.turn").nth(before).wait_for()
    page.wait_for_selector("#turns article.turn.running", state="detached", timeout=ANSWER_TIMEOUT_MS)
    turn = last_turn(page)
    assert "error" not in (turn.get_attribute("class") or ""), turn.inner_text()
    return turn


def test_ask_shows_sources_streamed_tokens_and_support_marks(page):
    page.goto("/")
    page.evaluate(OBSERVER)
    page.fill("#question", QUESTION)
    before = turn_count(page)
    page.click("#ask-form button[type=submit]")
    page.wait_for_selector("#turns article.turn.running .question")  # the question shows at once
    assert QUESTION in last_turn(page).locator(".question").inner_text()
    page.wait_for_selector("#turns article.turn.running .sources li.source", timeout=60_000)
    wait_until(page, "!!(window.__t && window.__t.first_token)", ANSWER_TIMEOUT_MS)
    turn = wait_answered(page, before)
    t = page.evaluate("window.__t")
    assert t["tokens"] > 3, "the answer arrived in one piece, not streamed"
    assert turn.locator(".sources li.source").count() >= 1
    marks = turn.locator(".checks li.verdict")
    assert marks.count() >= 1, turn.inner_text()
    assert turn.locator(".verdict .mark").first.inner_text() in ("✓", "✗")
    assert turn.locator(".timings").count() == 1
    timings = {"question": QUESTION, "submit_to_sources_ms": round(t["sources"] - t["submit"]),
               "submit_to_first_token_ms": round(t["first_token"] - t["submit"]),
               "submit_to_final_ms": round(t["final"] - t["submit"]), "token_swaps": t["tokens"],
               "verdicts_streamed": t.get("verdicts", 0)}
    (ARTIFACTS / "page_timings.json").write_text(json.dumps(timings, indent=2))
    print("page timings:", timings)
    page.screenshot(path=str(ARTIFACTS / "chat.png"), full_page=True)


def test_enter_asks_and_shift_enter_starts_a_new_line(page):
    """As in any chat: Shift+Enter adds a line to the question, Enter sends it (a greeting: answered
    without the reader, so the test is quick) and the box is cleared."""
    page.goto("/")
    before = turn_count(page)
    page.fill("#question", "hello")
    page.press("#question", "Shift+Enter")
    page.type("#question", "there")
    assert page.input_value("#question") == "hello\nthere" and turn_count(page) == before
    page.press("#question", "Enter")
    turn = wait_answered(page, before)
    assert "hello" in turn.locator(".question").inner_text() and turn.locator(".answer").inner_text().strip()
    assert page.input_value("#question") == ""


def test_a_refused_question_stays_in_the_box(page):
    """422/429 responses are swapped in as messages (htmx treats them as handled, not failed):
    the typed question must survive so the user can shorten it or resend it."""
    page.goto("/")
    page.evaluate("document.querySelector('#question').removeAttribute('maxlength')")
    too_long = "Is this question too long? " * 100
    page.fill("#question", too_long)
    page.click("#ask-form button[type=submit]")
    page.wait_for_selector("#turns .problem[data-kind=bad_input]")
    assert page.input_value("#question") == too_long


def test_each_kind_of_topic_button(page):
    page.goto("/")
    # {label, answer}: shown verbatim, no retrieval, no model
    before = turn_count(page)
    page.click(f"button.topic[data-mode=answer]:text-is('{DIRECT_TOPIC}')")
    turn = wait_answered(page, before)
    assert "NIST AI 100-2e2023" in turn.locator(".answer").inner_text()
    assert "saved answer" in turn.inner_text()
    # {label, prompt}: the page shows the label; the engine got the prompt (checked in the DB below)
    before = turn_count(page)
    page.click(f"button.topic[data-mode=prompt]:text-is('{PROMPT_TOPIC}')")
    turn = wait_answered(page, before)
    assert PROMPT_TOPIC in turn.locator(".question").inner_text()
    assert turn.locator(".answer").inner_text().strip()
    # plain string: asked as written
    before = turn_count(page)
    page.click(f"button.topic[data-mode=plain]:text-is('{PLAIN_TOPIC}')")
    turn = wait_answered(page, before)
    assert PLAIN_TOPIC in turn.locator(".question").inner_text()
    assert turn.locator(".answer").inner_text().strip()


def test_prompt_topic_sent_its_prompt_to_the_engine(live_server):
    from nistchat.extensions import db
    from nistchat.models import Message

    _base, app = live_server
    with app.app_context():
        message = db.session.query(Message).filter_by(label=PROMPT_TOPIC).one()
        assert message.prompt.startswith("What practices and tasks in NIST SP 800-218A")
        assert message.question == PROMPT_TOPIC


def test_search_history_and_open_a_result(page):
    page.goto("/history")
    page.fill("input[name=q]", "documen")  # search as you type: prefix match, no submit
    page.wait_for_selector("#results li.hit mark")
    assert "q=documen" in page.url  # hx-push-url keeps the search in the address bar
    assert page.locator("#results li.hit mark").first.inner_text().lower().startswith("documen")
    page.screenshot(path=str(ARTIFACTS / "history.png"), full_page=True)
    page.locator("#results li.hit a").first.click()
    page.wait_for_url(re.compile(r"/c/[0-9a-f]+"))
    assert DIRECT_TOPIC in page.locator("#turns").inner_text()
    assert page.locator("#ask-form").count() == 1  # and it can be continued from here


def test_download_csv(page):
    page.goto("/history")
    with page.expect_download() as info:
        page.click("a:text-is('CSV')")
    target = ARTIFACTS / "logs.csv"
    info.value.save_as(str(target))
    rows = list(csv.DictReader(target.open(encoding="utf-8")))
    assert {r["question"] for r in rows} >= {QUESTION, DIRECT_TOPIC}


def test_anonymous_admin_is_refused(browser, live_server):
    base, _ = live_server
    context = browser.new_context(base_url=base)
    pg = context.new_page()
    pg.goto("/admin/questions")
    assert pg.url.startswith(f"{base}/admin?")  # sent to the login form
    assert pg.locator("input[type=password]").count() == 1
    assert pg.request.get("/admin/questions", headers={"HX-Request": "true"}).status == 403
    context.close()


def test_admin_edits_a_question_and_chat_shows_it_without_restart(page):
    page.goto("/admin")
    page.fill("input[name=password]", ADMIN_PASSWORD)
    page.click("form.login button[type=submit]")
    page.goto("/admin/questions")
    label = page.locator("input[name='c1.q0.label']")
    label.fill("Edited in the browser: what are the AI RMF functions?")
    page.click("#save-questions")
    page.wait_for_selector("#editor .notice:has-text('Saved as version')")
    page.screenshot(path=str(ARTIFACTS / "admin.png"), full_page=True)
    page.goto("/")
    assert page.locator("button.topic:text-is('Edited in the browser: what are the AI RMF functions?')").count() == 1


def test_document_chips_are_listed_from_the_index_and_toggle(page):
    page.goto("/")
    chips = page.locator("fieldset.doc-chips input[name=docs]")
    assert chips.count() == 7  # one per indexed publication, read from the index
    chip = page.locator("fieldset.doc-chips input[value='NIST.SP.800-218A']")
    chip.check()
    assert chip.is_checked()
    page.screenshot(path=str(ARTIFACTS / "chips.png"))
    chip.uncheck()


def test_audit_page_checks_a_pasted_answer(page):
    page.goto("/")
    page.click("nav a:text-is('Audit')")
    page.fill("#audit-question", "What are the functions of the AI RMF Core?")
    page.fill("#audit-answer", "The AI RMF Core is composed of four functions: GOVERN, MAP, MEASURE, and MANAGE. "
                               "The Core was first published in 1997.")
    page.uncheck("input[name=judge]")  # the deterministic signals only: a judged audit is a model call per sentence
    page.click("#audit-form button[type=submit]", no_wait_after=True)  # the check takes a while on 2 cores
    page.wait_for_selector("#audit-result", timeout=ANSWER_TIMEOUT_MS)
    assert page.locator(".audit-sentence.supported mark").count() >= 1
    assert page.locator(".audit-sentence").count() == 2
    assert "Trust score" in page.locator("#audit-result h2").inner_text()
    page.screenshot(path=str(ARTIFACTS / "audit.png"), full_page=True)


def test_admin_metrics_page_shows_charts(page):
    page.goto("/admin")
    if page.locator("input[name=password]").count():
        page.fill("input[name=password]", ADMIN_PASSWORD)
        page.click("form.login button[type=submit]")
    page.goto("/admin")
    page.click("a:text-is('Metrics: where the answer time goes')")
    assert page.locator("h1").inner_text() == "Metrics"
    charts = ["chart-p95", "chart-hours", "chart-refused", "chart-flagged", "chart-downvotes"]
    assert [page.locator(f"figure#{c} svg").count() for c in charts] == [1] * len(charts)
    assert page.locator("figure.chart svg").count() == len(charts)
    page.click("a:text-is('all')")
    assert "window=all" in page.url
    page.screenshot(path=str(ARTIFACTS / "metrics.png"), full_page=True)
