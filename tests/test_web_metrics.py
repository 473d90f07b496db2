"""/metrics (admin): per-stage p50/p95 from stored Timing rows, per risk and reader, answers per
hour, refusals and flags per day, the slowest ten, SVG charts, /metrics.json and /metrics.prom."""
from __future__ import annotations

from datetime import timedelta

from nistchat.extensions import db
from nistchat.metrics.service import percentile
from nistchat.models import Conversation, Message, Timing, utcnow

from .web_support import login


def _answers(app):
    """Stored answers with known timings: 1..10 s totals, half HIGH risk, two refused, one flagged."""
    with app.app_context():
        conv = Conversation(owner="someone", title="t")
        db.session.add(conv)
        db.session.flush()
        for i in range(1, 11):
            m = Message(conversation_id=conv.id, owner="someone", question=f"question {i}", answer="a",
                        status="done", risk="HIGH" if i % 2 else "LOW", refused=i in (3, 4), total_ms=i * 1000.0,
                        backend={"reader": "embedded:qwen-test"}, created_at=utcnow() - timedelta(minutes=i),
                        verdicts=[{"text": "x", "supported": i != 5, "passage": 1}])
            db.session.add(m)
            db.session.flush()
            for stage, ms in (("retrieve", 100.0 * i), ("generate", 500.0 * i), ("total", 1000.0 * i)):
                db.session.add(Timing(message_id=m.id, stage=stage, ms=ms))
        old = Message(conversation_id=conv.id, owner="someone", question="last month", status="done",
                      total_ms=99_000.0, created_at=utcnow() - timedelta(days=30))
        db.session.add(old)
        db.session.flush()
        db.session.add(Timing(message_id=old.id, stage="total", ms=99_000.0))
        db.session.commit()


def test_metrics_are_admin_only(client):
    assert client.get("/metrics").status_code == 302
    assert client.get("/metrics.json").status_code == 302
    assert client.get("/metrics.prom").status_code == 302


def test_metrics_page_json_and_prometheus(app, client):
    _answers(app)
    login(client)
    data = client.get("/metrics.json?window=week").get_json()
    assert data["answers"] == 10
    assert data["stages"]["total"] == {"n": 10, "p50": 5000.0, "p95": 10000.0}
    assert data["by_risk"]["HIGH"]["total"]["n"] == 5 and data["by_risk"]["LOW"]["total"]["p95"] == 10000.0
    assert data["by_reader"]["embedded:qwen-test"]["generate"]["p50"] == 2500.0
    assert sum(h["answers"] for h in data["per_hour"]) == 10
    assert data["per_day"][-1]["refused"] + data["per_day"][-2]["refused"] == 2
    assert sum(d["flagged"] for d in data["per_day"]) == 1
    assert [s["total_ms"] for s in data["slowest"]][:2] == [10000.0, 9000.0] and len(data["slowest"]) == 10
    assert client.get("/metrics.json?window=all").get_json()["stages"]["total"]["p95"] == 99000.0
    html = client.get("/metrics").get_data(as_text=True)
    assert html.count("<svg") == 5 and "<rect" in html and "Slowest ten" in html  # 5: the 👎 per day
    assert "/c/" in html and "#msg-" in html and "question 10" in html
    prom = client.get("/metrics.prom").get_data(as_text=True)
    assert 'nistchat_stage_ms{stage="total",quantile="0.95",window="week"} 10000.0' in prom


def test_percentile_is_nearest_rank():
    assert percentile([], 50) is None
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0 and percentile(list(map(float, range(1, 101))), 95) == 95.0
