"""Where the time goes, from the per-stage timings stored with every answer (`Timing` rows):
p50/p95 per stage, per risk class and per reader over a window, answers per hour, refusals and
flagged answers per day, the slowest answers. Audits are left out (they have their own stages)."""
from __future__ import annotations

import math
from collections import defaultdict
from datetime import datetime, timedelta

from ..models import Message, Timing, utcnow

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
    }


def bars(values: list[float], width: int = 480, height: int = 120) -> list[dict]:
    """Bar geometry for an inline SVG chart (x, y, w, h per value), scaled to the largest value."""
    top = max(values, default=0) or 1
    step = width / max(1, len(values))
    return [{"x": round(i * step + 1, 1), "w": round(max(1.0, step - 2), 1), "h": round(v / top * (height - 14), 1),
             "y": round(height - v / top * (height - 14), 1), "v": v} for i, v in enumerate(values)]


def prometheus(data: dict) -> str:
    """The window's per-stage quantiles and counts in Prometheus' text format."""
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
    return "\n".join(lines) + "\n"
