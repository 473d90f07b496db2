"""The progress bar's length: P80 of past total answer times (queue wait included) for the
question's risk class, from the messages table; a configured default until enough samples exist."""
from __future__ import annotations

from flask import current_app

from ..models import Message

SAMPLE_WINDOW = 200  # recent answers only: model or hardware changes should show up quickly


def p80(samples: list[float]) -> float:
    """The issue's definition: sorted(lst)[int(len(lst) * 0.8)]."""
    return sorted(samples)[int(len(samples) * 0.8)]


def risk_class(question: str) -> str:
    """HIGH/LOW by the engine's own table, so the bar matches the pipeline's decision."""
    try:
        from ..engine.retrieval import RiskTable
        return RiskTable.from_settings(current_app.config["SETTINGS"]).classify(question).level
    except Exception:  # the classifier is optional for the bar; LOW is the cheaper guess
        return "LOW"


def samples(risk: str) -> list[float]:
    rows = (Message.query.with_entities(Message.total_ms)
            .filter(Message.risk == risk, Message.status == "done", Message.direct_answer.is_(None),
                    Message.total_ms.isnot(None))
            .order_by(Message.id.desc()).limit(SAMPLE_WINDOW).all())
    return [r[0] for r in rows]


def estimate_s(risk: str) -> tuple[float, int]:
    """(seconds, number of samples it is based on; 0 means the default)."""
    values = samples(risk)
    web = current_app.config["SETTINGS"].web
    if len(values) < web.p80_min_samples:
        return (web.p80_default_high_s if risk == "HIGH" else web.p80_default_low_s), 0
    return round(p80(values) / 1000, 1), len(values)
