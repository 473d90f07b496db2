"""Chat logs for a day or a date range, streamed row by row (CSV or JSON lines) so a large log
never sits in memory. Scope: one browser's own messages, or everyone's for an admin."""
from __future__ import annotations

import csv
import io
import json
from datetime import date, datetime, time, timedelta, timezone
from typing import Iterator

from flask import abort, request

from ..auth import is_admin, owner_id
from ..docs.service import doc_title
from ..models import Message

FIELDS = ["id", "time", "conversation", "owner", "question", "label", "prompt", "answer", "refused", "risk",
          "retried", "retry_kept", "incomplete", "status", "error_kind", "error", "total_ms", "backend", "sources",
          "verdicts", "docs", "doc_titles", "kind", "audit", "feedback"]
MAX_DAYS = 366
FIRST_DAY, LAST_DAY = date(1970, 1, 1), date(9999, 12, 30)  # the day after LAST_DAY still exists


class BadRange(ValueError):
    """from/to are not valid dates, or from is after to; the message says which."""


def parse_day(value: str | None, name: str) -> date | None:
    if not value:
        return None
    try:
        day = date.fromisoformat(value)
    except ValueError:
        raise BadRange(f"{name} must be a date like 2025-01-31, got {value!r}") from None
    if not FIRST_DAY <= day <= LAST_DAY:
        raise BadRange(f"{name} must be between {FIRST_DAY} and {LAST_DAY}, got {value!r}")
    return day


def date_range(start: str | None, end: str | None, today: date | None = None) -> tuple[date, date]:
    """(first, last) day, inclusive; both default to today, and one alone means that day."""
    today = today or date.today()
    first, last = parse_day(start, "from"), parse_day(end, "to")
    first = first or last or today
    last = last or (first if start else today)
    if first > last:
        raise BadRange(f"from ({first}) is after to ({last})")
    if (last - first).days > MAX_DAYS:
        raise BadRange(f"the range is limited to {MAX_DAYS} days")
    try:  # checked here, before a response starts streaming: an error then is a bare 500
        utc_bounds(first, last)
    except (OverflowError, ValueError, OSError):
        raise BadRange(f"{first} to {last} cannot be converted to UTC on this server") from None
    return first, last


def utc_bounds(first: date, last: date) -> tuple[datetime, datetime]:
    """[first 00:00, day after last 00:00) in the server's local time (the days of the daily log
    file), as the naive UTC that messages are stored in."""
    def utc(day: date) -> datetime:
        return datetime.combine(day, time.min).astimezone(timezone.utc).replace(tzinfo=None)
    return utc(first), utc(last + timedelta(days=1))


def records(first: date, last: date, owner: str | None) -> Iterator[dict]:
    start, end = utc_bounds(first, last)
    query = Message.query.filter(Message.created_at >= start, Message.created_at < end)
    if owner is not None:
        query = query.filter(Message.owner == owner)
    for m in query.order_by(Message.id).yield_per(200):
        yield {"id": m.id, "time": m.created_at.replace(tzinfo=timezone.utc).isoformat(timespec="seconds"), "conversation": m.conversation_id,
               "owner": m.owner, "question": m.question, "label": m.label, "prompt": m.prompt, "answer": m.answer,
               "refused": m.refused, "risk": m.risk, "retried": m.retried, "retry_kept": m.retry_kept,
               "incomplete": m.incomplete, "status": m.status, "error_kind": m.error_kind, "error": m.error,
               "total_ms": m.total_ms, "backend": m.backend, "sources": [_source_ref(s) for s in (m.sources or [])],
               "verdicts": m.verdicts or [], "docs": m.docs or [],
               "doc_titles": [doc_title(d) for d in m.docs or []], "kind": m.kind or "chat",
               "audit": m.audit, "feedback": [f.to_dict() for f in m.feedback]}


def _source_ref(source: dict) -> str:
    """'[1] AI RMF 1.0 (NIST AI 100-1) — 5.1 Govern p.3 {nist-ai-100-1:…}': the title a person
    reads, and the passage id that opens it in the viewer (/docs/<doc>?at=<id>)."""
    page = f" p.{source.get('page')}" if source.get("page") else ""
    section = f" — {source.get('section')}" if source.get("section") else ""
    title = doc_title(source.get("doc") or "", source.get("title"))
    return f"[{source.get('rank')}] {title}{section}{page} {{{source.get('id')}}}"


def jsonl(rows: Iterator[dict]) -> Iterator[str]:
    for row in rows:
        yield json.dumps(row, ensure_ascii=False, default=str) + "\n"


def csv_lines(rows: Iterator[dict]) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=FIELDS, extrasaction="ignore")
    writer.writeheader()
    for row in rows:
        row = {k: (json.dumps(v, ensure_ascii=False) if isinstance(v, (list, dict)) else v) for k, v in row.items()}
        writer.writerow(_defuse(row))
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    yield buffer.getvalue()


def _defuse(row: dict) -> dict:
    """Spreadsheet formula injection: text cells that start with = + - @ tab or CR are quoted."""
    return {k: ("'" + v if isinstance(v, str) and v[:1] in ("=", "+", "-", "@", "\t", "\r") else v)
            for k, v in row.items()}


def log_scope() -> str | None:
    """The request's owner filter (`?scope=own|all`): None means all users, which needs an admin."""
    scope = request.args.get("scope", "all" if is_admin() else "own")
    if scope == "all":
        if not is_admin():
            abort(403)
        return None
    return owner_id()
