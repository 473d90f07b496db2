"""Server-sent events for one answer: engine events become small HTML fragments that the htmx
SSE extension swaps into the turn (sources, tokens, verdicts, retry note, queue place), then the
stored message replaces the whole turn. Everything is rendered by Jinja, so it is escaped."""
from __future__ import annotations

import time
from typing import Iterator

from flask import current_app, render_template
from markupsafe import escape

from ..extensions import db
from ..models import Message
from .runs import AnswerRun

HEARTBEAT = ": keep-alive\n\n"


def frame(event: str, html: str) -> str:
    html = html or "<span></span>"  # an SSE event with empty data is never dispatched
    # SSE ends a line at CR too: a lone "\r" (a CRLF answer typed in the admin editor) would cut
    # the data line there and drop the rest.
    lines = html.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return f"event: {event}\n" + "".join(f"data: {line}\n" for line in lines) + "\n"


def final_frames(message_id: int) -> Iterator[str]:
    db.session.expire_all()
    message = db.session.get(Message, message_id)
    yield frame("final", render_template("chat/_message.html", message=message, streamed=True))
    yield frame("done", "done")


def sse_events(run: AnswerRun) -> Iterator[str]:
    """Render a run's events (replayed from its start) as SSE frames, with heartbeats, and the
    place in the reader queue (the engine's `queue` events carry the ticket's real place)."""
    app = current_app._get_current_object()
    mid = run.message_id
    waiting = False
    sources: list[dict] = []
    last_sent = time.monotonic()
    yield "retry: 3000\n\n"
    for event in run.follow(tick_s=1.0):
        if event is None:
            if time.monotonic() - last_sent >= app.config["SETTINGS"].web.heartbeat_s:
                last_sent = time.monotonic()
                yield HEARTBEAT  # keeps proxies and waitress's channel timeout from closing a slow answer
            continue
        last_sent = time.monotonic()
        kind = event.get("type")
        if kind == "sources":
            sources = event.get("passages", [])
            yield frame("sources", render_template("chat/_sources.html", sources=sources, mid=mid,
                                                   searched_for=event.get("searched_for")))
        elif kind == "queue":
            waiting = bool(event.get("ahead"))
            yield frame("queue", render_template("chat/_queue.html", ahead=event.get("ahead", 0)))
        elif kind == "prefill":  # the reader reads the passages before its first word: say so, with its own bar
            waiting = True
            yield frame("queue", render_template("chat/_queue.html", ahead=0, prefill=event))
        elif kind == "token":
            if waiting:
                waiting = False
                yield frame("queue", render_template("chat/_queue.html", ahead=0))
            yield frame("token", str(escape(event.get("text", ""))))
        elif kind == "verdict":
            yield frame("verdict", render_template("chat/_verdict.html", verdict=event, sources=sources, mid=mid))
        elif kind == "retry":
            yield frame("retry", render_template("chat/_retry.html", reason=event.get("reason", ""), mid=mid))
        elif kind == "error":
            yield frame("problem", render_template("chat/_problem.html", kind=event.get("kind"),
                                                   message=event.get("message", "")))
        elif kind == "stored":
            yield from final_frames(mid)
            return
