"""Small helpers every blueprint shares: htmx detection, error responses (a clear message, never a
stack trace), template filters and FTS5's highlight markers. A leaf: it imports no blueprint."""
from __future__ import annotations

import json
import re
from pathlib import Path

from flask import Flask, current_app, get_template_attribute, jsonify, render_template, request
from markupsafe import Markup, escape
from werkzeug.routing import IntegerConverter

from .engine import COPY_RETRY, DECLINED_RETRY, DENIED_RETRY, LIST_RETRY, POLAR_RETRY, PREMISE_RETRY
from .engine.text import split_sentences
from .engine.verification import in_quote


STATIC_DIR = Path(__file__).resolve().parent / "static"
HIGHLIGHT_START, HIGHLIGHT_END = "\x02", "\x03"  # sentinels FTS5 highlight() puts around matches


MAX_DB_INT = 2**63 - 1  # SQLite's largest integer: a bigger id raises OverflowError, not "not found"
CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # C0 and C1 controls but tab and newline


class BoundedInt(IntegerConverter):
    """`<int:...>` in every route: a number beyond SQLite's range does not match (404), so a
    23-digit id never reaches the database."""

    def __init__(self, url_map, *args, **kwargs):
        kwargs.setdefault("max", MAX_DB_INT)
        super().__init__(url_map, *args, **kwargs)


def db_int(value: str) -> int:
    """`request.args.get(name, type=db_int)`: a non-negative integer SQLite can hold, else the
    default (werkzeug turns the ValueError into it)."""
    number = int(value)
    if not 0 <= number <= MAX_DB_INT:
        raise ValueError(f"{value!r} is out of range")
    return number


def clean_text(value: str | None) -> str:
    """User text as stored: control characters other than newline and tab removed (NUL, ESC, and
    FTS5's own highlight sentinels \\x02/\\x03, which history would turn into markup). A CR of CRLF
    goes too, so a textarea's line ends are plain newlines."""
    return CONTROL_CHARS.sub("", value or "")


def clean_tree(value):
    """clean_text over every string in parsed JSON (a posted questions config)."""
    if isinstance(value, str):
        return clean_text(value)
    if isinstance(value, list):
        return [clean_tree(v) for v in value]
    if isinstance(value, dict):
        return {clean_text(k) if isinstance(k, str) else k: clean_tree(v) for k, v in value.items()}
    return value


def is_htmx() -> bool:
    return request.headers.get("HX-Request") == "true"


def plain(highlighted: str) -> str:
    """FTS5 highlight() output without its match marks."""
    return highlighted.replace(HIGHLIGHT_START, "").replace(HIGHLIGHT_END, "")


def highlight(text: str | None) -> Markup:
    """Escape text first, then turn FTS5's sentinel marks into <mark>: safe on user text."""
    escaped = str(escape(text or ""))
    return Markup(escaped.replace(HIGHLIGHT_START, "<mark>").replace(HIGHLIGHT_END, "</mark>"))


def seconds(ms) -> str:
    if ms is None:
        return "–"
    return f"{ms / 1000:.1f} s"


def retry_note(reason: str | None, stored: bool = False, kept: bool = True) -> str:
    """What the page says of a rewritten answer, live (`stored` False) or under the stored one:
    the retry naming the items of a list the first draft only counted, the one quoting what settles
    a yes/no question the first draft only answered "Yes" to (or "Yes" against a source that says
    no), the source's sentence alone where the draft agreed with a premise it contradicts or found
    no answer after it, the previous answer's first sentence where a shortening gave it back whole,
    or the citation-forced one. `kept` False: the stored answer is the first draft, the retry having
    done no better (`Answer.retry_kept`)."""
    if stored and not kept:
        return ("A rewrite of the first draft was tried, but it did no better, so the first draft is shown, each "
                "sentence marked as the check found it.")
    if reason == LIST_RETRY:
        return ("The first draft only counted the items, so this answer was rewritten to name each one." if stored
                else "The first draft only counted the items, so the answer is being rewritten to name each one.")
    if reason == POLAR_RETRY:
        return ("The first draft only said yes, so this answer was rewritten to quote the source that settles it."
                if stored else "The first draft only said yes, so the answer is being rewritten to quote the source "
                               "that settles it.")
    if reason == DENIED_RETRY:
        return ("The first draft said yes where the source says no, so this answer was rewritten to quote it." if stored
                else "The first draft said yes where the source says no, so the answer is being rewritten to quote it.")
    if reason == COPY_RETRY:
        return ("Asked to shorten the previous answer, the draft gave it back as it was, so this answer is its first "
                "sentence." if stored else "Asked to shorten the previous answer, the draft gave it back as it was, so "
                "the answer is being replaced by its first sentence.")
    if reason == PREMISE_RETRY:
        return ("The first draft agreed with what the question assumes, which the source contradicts, so this answer "
                "is that source's sentence." if stored else "The first draft agreed with what the question assumes, "
                "which the source contradicts, so the answer is being replaced by that source's sentence.")
    if reason == DECLINED_RETRY:
        return ("The first draft found no answer, so this answer is the source's sentence that contradicts what the "
                "question assumes." if stored else "The first draft found no answer, so the answer is the source's "
                "sentence that contradicts what the question assumes.")
    if stored:
        return "The first draft was not well supported, so this answer was rewritten from exact source sentences."
    return ("Most sentences of the first draft were not supported by the sources, so the answer is being rewritten "
            "using only exact source sentences" + (f" ({reason})." if reason else "."))


_READER_MARK = re.compile(r"\[(\d{1,3})\]")


def _sentence_around(text: str, start: int) -> str:
    """The answer's sentence holding the mark at `start`, as the checker splits the answer (a mark
    after the period belongs to the sentence before it): what the viewer matches in the passage."""
    cursor = 0
    for sentence in split_sentences(text):
        at = text.find(sentence, cursor)
        if at < 0:
            continue
        if at <= start < at + len(sentence):
            return sentence
        cursor = at + len(sentence)
    return ""


def answer_html(answer: str | None, sources: list[dict] | None, mid) -> Markup:
    """The answer with its citation marks as links that open the viewer at their passage, with the
    same preview as a source line's mark (docs/_cite.html): the reader's own `[n]` as class
    `cite-reader`, and, after a sentence the reader left unmarked, the checker's passage as class
    `cite-checker` (stored with each source as `checker_sentences`,
    engine/verification/citations.py). Text is escaped before any tag is added."""
    text = answer or ""
    by_rank = {s.get("rank"): s for s in sources or []}
    cite = get_template_attribute("docs/_cite.html", "cite")
    uid = current_app.jinja_env.globals["uid"]

    def mark(source: dict, claim: str, who: str) -> str:
        if not (source.get("doc") and source.get("id")):  # no passage to open: the source line
            return (f'<a class="cite cite-{who}" href="#src-{escape(mid)}-{int(source["rank"])}">'
                    f'[{int(source["rank"])}]</a>')
        return str(cite(source, uid(), claim, who))

    pieces: list[tuple[int, int, str]] = []  # (start, end, html) replacing text[start:end]
    for found in _READER_MARK.finditer(text):
        source = by_rank.get(int(found.group(1)))
        if source is not None and not in_quote(text, found.start()):  # a quote's own marks are its words
            pieces.append((found.start(), found.end(),
                           mark(source, _sentence_around(text, found.start()), "reader")))
    for source in sources or []:
        for sentence in source.get("checker_sentences") or []:
            at = text.find(sentence)
            if at >= 0:
                pieces.append((at + len(sentence), at + len(sentence), " " + mark(source, sentence, "checker")))
    out, cursor = [], 0
    for start, end, html in sorted(pieces, key=lambda p: (p[0], p[1])):
        if start < cursor:
            continue
        out.append(str(escape(text[cursor:start])))
        out.append(html)
        cursor = end
    out.append(str(escape(text[cursor:])))
    return Markup("".join(out))


def find_source(sources, ref):
    """The shown passage a verdict or citation points to: by 1-based rank, or by passage id."""
    for source in sources or []:
        if ref is not None and (source.get("rank") == ref or source.get("id") == ref):
            return source
    return None


def htmx_assets(app: Flask) -> list[dict]:
    pins = json.loads((STATIC_DIR / "htmx-pins.json").read_text(encoding="utf-8"))
    cdn = app.config["SETTINGS"].web.htmx == "cdn"
    return [{"src": pin["cdn"] if cdn else f"/static/vendor/{pin['local']}",
             "integrity": pin["integrity"] if cdn else None} for pin in pins.values()]


def content_security_policy(assets: list[dict]) -> str:
    """Scripts and everything else from this site only, plus the pinned htmx URLs when they come
    from the CDN (`web.htmx = "cdn"`); no inline script and no eval (htmx's allowEval is off),
    no framing. Inline styles stay allowed: the progress bar sets its length in a style
    attribute and htmx adds its indicator style."""
    scripts = " ".join(["'self'"] + [a["src"] for a in assets if a["src"].startswith("https://")])
    return ("default-src 'self'; "
            f"script-src {scripts}; "
            "style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; "
            "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'")


SECURITY_HEADERS = {"X-Content-Type-Options": "nosniff", "X-Frame-Options": "DENY",
                    "Referrer-Policy": "same-origin", "Cross-Origin-Opener-Policy": "same-origin"}


ERROR_KINDS = {400: "bad_input", 403: "forbidden", 404: "not_found", 405: "bad_method", 413: "too_large",
               429: "rate_limited", 500: "internal"}


def api_error(status: int, kind: str, message: str):
    """The API's error body: the same shape as the engine's error event."""
    return jsonify({"type": "error", "kind": kind, "message": message}), status


def render_error(message: str, status: int, title: str = "Something went wrong"):
    """The error as the caller reads it: JSON for the API's scripts, a partial for htmx, else a page."""
    if request.path.startswith("/api/"):
        return api_error(status, ERROR_KINDS.get(status, "error"), message)
    template = "_error.html" if is_htmx() else "error.html"
    return render_template(template, title=title, message=message, status=status), status
