"""Where the time goes, from the per-stage timings stored with every answer (`Timing` rows):
p50/p95 per stage, per risk class and per reader over a window, answers per hour, refusals and
flagged answers per day, the slowest answers. Audits are left out (they have their own stages)."""
from __future__ import annotations

import math
from collections import defaultdict
from datetime import datetime, timedelta

from ..models import Feedback, Message, Timing, utcnow

STAGES = ("retrieve", "first_token", "generate", "verify", "retry", "total", "queue", "wall")
WINDOWS = {"day": timedelta(days=1), "week": timedelta(days=7), "all": None}
DAYS_SHOWN = 14  # refusals and flags per day
HOURS_SHOWN = 24  # answers per hour


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100) of the values; None for none."""
    if not values:
        return None
    ordered = sorted(values)
    return round(ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)], 1)


def _summary(values: list[float]) -> dict:
    return {"n": len(values), "p50": percentile(values, 50), "p95": percentile(values, 95)}


def _reader(message: Message) -> str:
    reader = (message.backend or {}).get("reader")
    if reader:
        return reader
    return "none (saved answer)" if message.direct_answer else "unknown"


def _flagged(message: Message) -> bool:
    return any(not v.get("supported", True) for v in (message.verdicts or []))


def _cited_docs(message: Message) -> list[str]:
    """The documents an answer cites (all its shown sources' documents when it cites none)."""
    sources = message.sources or []
    cited = [s.get("doc") for s in sources if s.get("cited")] or [s.get("doc") for s in sources]
    return list(dict.fromkeys(d for d in cited if d))


def feedback_counts(messages: list[Message], first_day: datetime) -> dict:
    """Votes on the window's answers: totals, per reason, per risk class, per cited document (ids,
    as the API keeps them), per reader, and per day since `first_day` (by the vote's time)."""
    by_id = {m.id: m for m in messages}
    rows = Feedback.query.filter(Feedback.message_id.in_(list(by_id) or [-1])).all() if by_id else []
    empty = lambda: {"up": 0, "down": 0}  # noqa: E731
    totals, reasons = empty(), defaultdict(int)
    by_risk, by_doc, by_reader = defaultdict(empty), defaultdict(empty), defaultdict(empty)
    days = {(first_day + timedelta(days=d)).date().isoformat(): empty() for d in range(DAYS_SHOWN)}
    for f in rows:
        m = by_id[f.message_id]
        totals[f.vote] += 1
        if f.reason:
            reasons[f.reason] += 1
        by_risk[m.risk or "none"][f.vote] += 1
        by_reader[_reader(m)][f.vote] += 1
        for doc in _cited_docs(m):
            by_doc[doc][f.vote] += 1
        day = f.updated_at.date().isoformat()
        if day in days:
            days[day][f.vote] += 1
    return {**totals, "reasons": dict(sorted(reasons.items())), "by_risk": dict(sorted(by_risk.items())),
            "by_doc": dict(sorted(by_doc.items())), "by_reader": dict(sorted(by_reader.items())),
            "per_day": [{"day": d, **v} for d, v in days.items()]}


def collect(window: str = "week", now: datetime | None = None) -> dict:
    """Everything /metrics shows, as plain data (the page, /metrics.json and /metrics.prom read it)."""
    now = now or utcnow()
    span = WINDOWS[window]
    query = Message.query.filter(Message.kind == "chat", Message.status != "pending")
    if span is not None:
        query = query.filter(Message.created_at >= now - span)
    messages = query.all()
    by_id = {m.id: m for m in messages}
    timings = Timing.query.filter(Timing.message_id.in_(list(by_id) or [-1])).all() if by_id else []
    stage_values: dict[str, list[float]] = defaultdict(list)
    by_risk: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    by_reader: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for t in timings:
        if t.stage not in STAGES:
            continue
        m = by_id[t.message_id]
        stage_values[t.stage].append(t.ms)
        by_risk[m.risk or "none"][t.stage].append(t.ms)
        by_reader[_reader(m)][t.stage].append(t.ms)
    stages = [s for s in STAGES if s in stage_values]

    def table(groups) -> dict:
        return {name: {s: _summary(v) for s, v in sorted(per.items(), key=lambda kv: STAGES.index(kv[0]))}
                for name, per in sorted(groups.items())}

    hours = []
    start_hour = now.replace(minute=0, second=0, microsecond=0) - timedelta(hours=HOURS_SHOWN - 1)
    recent = Message.query.filter(Message.kind == "chat", Message.created_at >= start_hour).all()
    for h in range(HOURS_SHOWN):
        lo = start_hour + timedelta(hours=h)
        hours.append({"hour": lo.isoformat(timespec="minutes"),
                      "answers": sum(1 for m in recent if lo <= m.created_at < lo + timedelta(hours=1))})
    days = []
    first_day = (now - timedelta(days=DAYS_SHOWN - 1)).replace(hour=0, minute=0, second=0, microsecond=0)
    last_days = Message.query.filter(Message.kind == "chat", Message.created_at >= first_day).all()
    for d in range(DAYS_SHOWN):
        lo = first_day + timedelta(days=d)
        day = [m for m in last_days if lo <= m.created_at < lo + timedelta(days=1)]
        days.append({"day": lo.date().isoformat(), "answers": len(day), "refused": sum(m.refused for m in day),
                     "flagged": sum(_flagged(m) for m in day)})
    slowest = sorted((m for m in messages if m.total_ms is not None), key=lambda m: -m.total_ms)[:10]
    return {
        "window": window, "generated": now.isoformat(timespec="seconds"), "answers": len(messages),
        "stages": {s: _summary(stage_values[s]) for s in stages},
        "by_risk": table(by_risk), "by_reader": table(by_reader),
        "per_hour": hours, "per_day": days,
        "slowest": [{"message_id": m.id, "conversation_id": m.conversation_id, "question": m.shown_question[:200],
                     "total_ms": m.total_ms, "risk": m.risk, "reader": _reader(m),
                     "time": m.created_at.isoformat(timespec="seconds")} for m in slowest],
        "feedback": feedback_counts(messages, first_day),
    }


def bars(values: list[float], width: int = 480, height: int = 120) -> list[dict]:
    """Bar geometry for an inline SVG chart (x, y, w, h per value), scaled to the largest value."""
    top = max(values, default=0) or 1
    step = width / max(1, len(values))
    return [{"x": round(i * step + 1, 1), "w": round(max(1.0, step - 2), 1), "h": round(v / top * (height - 14), 1),
             "y": round(height - v / top * (height - 14), 1), "v": v} for i, v in enumerate(values)]


def prometheus(data: dict) -> str:
    """The window's per-stage quantiles and counts in Prometheus' text format, and the reader's
    slots in use now when `data` carries the queue."""
    lines = ["# HELP nistchat_stage_ms Per-stage answer time in milliseconds (stored timings).",
             "# TYPE nistchat_stage_ms summary"]
    for stage, s in data["stages"].items():
        for q, key in (("0.5", "p50"), ("0.95", "p95")):
            if s[key] is not None:
                lines.append(f'nistchat_stage_ms{{stage="{stage}",quantile="{q}",window="{data["window"]}"}} {s[key]}')
        lines.append(f'nistchat_stage_ms_count{{stage="{stage}",window="{data["window"]}"}} {s["n"]}')
    lines += ["# HELP nistchat_answers Answers stored in the window.", "# TYPE nistchat_answers gauge",
              f'nistchat_answers{{window="{data["window"]}"}} {data["answers"]}']
    today = data["per_day"][-1] if data["per_day"] else {"refused": 0, "flagged": 0}
    lines += ["# TYPE nistchat_refused_today gauge", f"nistchat_refused_today {today['refused']}",
              "# TYPE nistchat_flagged_today gauge", f"nistchat_flagged_today {today['flagged']}"]
    feedback = data.get("feedback") or {}
    lines += ["# HELP nistchat_feedback Votes on the window's answers.", "# TYPE nistchat_feedback gauge"]
    lines += [f'nistchat_feedback{{vote="{vote}",window="{data["window"]}"}} {feedback.get(vote, 0)}'
              for vote in ("up", "down")]
    queue = data.get("queue")
    if queue:  # live, not of the window
        lines += ["# HELP nistchat_reader_slots Answers that may use the reader at once (queue.reader_slots).",
                  "# TYPE nistchat_reader_slots gauge", f"nistchat_reader_slots {queue['slots']}",
                  "# HELP nistchat_reader_slots_in_use Answers using the reader now.",
                  "# TYPE nistchat_reader_slots_in_use gauge", f"nistchat_reader_slots_in_use {queue['serving']}",
                  "# HELP nistchat_reader_waiting Answers waiting for a reader slot now.",
                  "# TYPE nistchat_reader_waiting gauge", f"nistchat_reader_waiting {queue['waiting']}"]
    return "\n".join(lines) + "\n"
