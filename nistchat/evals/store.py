"""Evaluation runs in SQLite: running one (retrieval or answers, over the dev/test sets) and
storing every item as it finishes, reading runs back as plain dicts for `eval_report`, and the
one background job the admin page may start at a time.

Needs an app context (Flask-SQLAlchemy); the scoring itself is in the engine (`eval_answers`,
`evaluate`, `eval_report`), which knows nothing of the database.
"""
from __future__ import annotations

import dataclasses
import logging
import os
import socket
import threading
from pathlib import Path

from flask import Flask

from ..config import PROJECT_ROOT
from ..engine.evaluation import run_answers, subset
from ..engine.evaluation import config_snapshot, headline
from ..engine.evaluation import MODES, SET_SPECS, evaluate, load_golden, resolve_sets  # SET_SPECS: for the page
from ..engine.processes import pid_alive
from ..extensions import db
from ..models import EvalItem, EvalRun, utcnow

log = logging.getLogger(__name__)
KINDS = ("retrieval", "answers")  # what the page can start; `conversations` runs are stored by the CLI


def eval_dirs(settings) -> list[Path]:
    return [settings.instance_dir / "eval", settings.data_dir / "eval", PROJECT_ROOT / "data" / "eval"]


def load_sets(settings, spec: str, limit: int | None = None) -> tuple[dict[str, list[dict]], dict[str, str], list[str]]:
    """{set name: items} (each cut to `limit`, mixing categories), {set name: path}, notes. The
    reported set is written from the database first, so a run scores the items made so far."""
    if spec == "reported":
        from ..feedback.reported import write_reported

        write_reported(settings)
    paths, notes = resolve_sets(spec, eval_dirs(settings))
    sets = {name: subset(load_golden(path), limit) for name, path in paths.items()}
    return sets, {n: str(p) for n, p in paths.items()}, notes


def create_run(runtime, kind: str, spec: str, *, limit: int | None = None, judge_n: int = 0, note: str = "",
               k: int | None = None, modes: tuple[str, ...] = MODES) -> EvalRun:
    """A `running` row with the config snapshot, before any question is asked (the page shows it)."""
    sets, paths, notes = load_sets(runtime.settings, spec, limit)
    total = sum(len(v) for v in sets.values()) * (len(modes) if kind == "retrieval" else 1)
    config = config_snapshot(runtime, kind=kind, sets=paths, limit=limit, judge_n=judge_n,
                             process={"pid": os.getpid(), "host": socket.gethostname()},
                             **({"retrieval_k": k, "modes": list(modes)} if kind == "retrieval" else {}))
    run = EvalRun(kind=kind, status="running", config=config, note=note or None, total=total,
                  sets=",".join(sets), metrics={"notes": notes} if notes else None)
    db.session.add(run)
    db.session.commit()
    return run


def _item(run_id: int, set_name: str, item: dict, record: dict, passed: bool | None, ms: float | None) -> EvalItem:
    expected = {k: item.get(k) for k in ("doc", "evidence", "answer", "key_terms") if k in item}
    return EvalItem(run_id=run_id, question_id=item.get("id"), question=item["question"], expected=expected,
                    result=record, passed=passed, ms=ms, set_name=set_name, category=item.get("category"))


def execute(runtime, run_id: int, *, spec: str, limit: int | None = None, judge_n: int = 0,
            k: int | None = None, modes: tuple[str, ...] = MODES, reports: dict | None = None) -> EvalRun:
    """Run the evaluation a `create_run` row describes, storing items and progress as they come.
    Retrieval runs put each set's full report (misses included) in `reports` when given."""
    run = db.session.get(EvalRun, run_id)
    try:
        sets, _paths, notes = load_sets(runtime.settings, spec, limit)
        summaries = {}
        for set_name, items in sets.items():
            if run.kind == "retrieval":
                base = run.done

                def progress(done, _total, base=base):
                    run.done = base + done
                    if done % 10 == 0:
                        db.session.commit()

                report = evaluate(runtime.retriever, items, k=k or runtime.settings.answer.k, modes=modes,
                                  on_item=progress)
                for item, record in zip(items, report.pop("items")):
                    record["timings_ms"] = record.pop("stages_ms", {})
                    hit = record["scores"].get("hit")
                    db.session.add(_item(run.id, set_name, item, record, None if hit is None else hit == 1.0,
                                         record["timings_ms"].get("total")))
                if reports is not None:
                    reports[set_name] = report
                summaries[set_name] = {m: {k2: v for k2, v in s.items() if k2 != "misses"}
                                       for m, s in report["modes"].items()}
                db.session.commit()
            else:
                def store(item, record, set_name=set_name):
                    db.session.add(_item(run.id, set_name, item, record, record["passed"], record.get("ms")))
                    run.done += 1
                    db.session.commit()

                run_answers(runtime, items, judge_n=judge_n, on_item=store)
        rows = [item_dict(i) for i in run.items]
        run.metrics = {"sets": headline(rows), **({"modes": summaries} if summaries else {}),
                       **({"notes": notes} if notes else {})}
        run.status = "done"
    except Exception as exc:
        log.exception("evaluation run %s failed", run_id)
        db.session.rollback()
        run = db.session.get(EvalRun, run_id)
        run.status = "error"
        run.note = ((run.note or "") + f" failed: {type(exc).__name__}: {exc}").strip()
    run.finished_at = utcnow()
    db.session.commit()
    return run


def store_conversations(runtime, reports: dict, paths: dict[str, str], *, note: str = "") -> EvalRun:
    """A finished `conversations` run (engine/eval_conversations): one item per turn, its set's name,
    its kind as the category and `evidence_hit` as the score, so the list, the page's per-category
    chart and `eval compare` read it like an answers run's evidence hits."""
    answered = any(rep.answered for rep in reports.values())
    config = config_snapshot(runtime, kind="conversations", sets=paths, retrieval_k=next(iter(reports.values())).k,
                             answers=answered,
                             history="previous questions and the reader's answers, with their passages" if answered
                             else "previous questions, expected answers as the assistant's text, with their passages")
    run = EvalRun(kind="conversations", status="running", config=config, note=note or None,
                  total=sum(len(r.turns) for r in reports.values()), sets=",".join(reports))
    db.session.add(run)
    db.session.commit()
    for set_name, report in reports.items():
        for r in report.turns:
            expected = dataclasses.asdict(r.expected) if r.expected else None
            db.session.add(EvalItem(run_id=run.id, question_id=r.id, question=r.question, set_name=set_name,
                                    expected=expected,
                                    category=r.kind, passed=r.hit, ms=r.ms,
                                    result={"scores": {"evidence_hit": 1.0 if r.hit else 0.0,
                                                       **({"key_terms": r.key_terms} if r.key_terms is not None else {}),
                                                       **({"wrongly_refused": float(r.refused)} if answered else {})},
                                            **({"answer": r.answer} if r.answer is not None else {}),
                                            "turn": r.index + 1, "follow_up": r.follow_up, "gate_refused": r.gate_refused,
                                            "refusal": r.refusal, "error": r.error, "translation": r.translation,
                                            "search_text": r.search_text, "missing": r.missing,
                                            "passages": r.passages, "timings_ms": {"total": r.ms}}))
    run.done = run.total
    rows = [item_dict(i) for i in run.items]
    run.metrics = {"sets": headline(rows), "conversations": {n: r.summary() for n, r in reports.items()}}
    run.status = "done"
    run.finished_at = utcnow()
    db.session.commit()
    return run


def _running_elsewhere(process: dict) -> bool:
    """Whether the process that started a run may still be running it. Unknown (an older run
    without a record, or another host) counts as gone only when no record exists."""
    if not process.get("pid"):
        return False
    if process.get("host") != socket.gethostname() or process["pid"] == os.getpid():
        return True
    return pid_alive(process["pid"])


def mark_interrupted() -> list[int]:
    """Runs left `running` by a process that is gone (Ctrl-C, a kill, a restart) become
    `interrupted`, keeping the items they stored, so no list shows them running for ever."""
    gone = [run for run in EvalRun.query.filter_by(status="running").all()
            if not _running_elsewhere((run.config or {}).get("process") or {})]
    for run in gone:
        run.status = "interrupted"
        run.note = ((run.note or "") + f" interrupted after {run.done} of {run.total} items: "
                                       "its process had stopped").strip()
        run.finished_at = run.finished_at or utcnow()
    if gone:
        db.session.commit()
    return [run.id for run in gone]


def item_dict(item: EvalItem) -> dict:
    result = item.result or {}
    return {"set": item.set_name, "question_id": item.question_id, "category": item.category,
            "question": item.question, "passed": item.passed, "ms": item.ms,
            "scores": result.get("scores") or {}, "judged": result.get("judged") or {},
            "timings_ms": result.get("timings_ms") or {}}


def run_dict(run: EvalRun, *, full: bool = False) -> dict:
    """A run as plain data; `full` adds every item's stored result (passages, answer, verdicts)."""
    items = []
    for item in run.items:
        row = item_dict(item)
        if full:
            row.update(expected=item.expected, result=item.result)
        items.append(row)
    return {"id": run.id, "kind": run.kind, "status": run.status, "sets": run.sets, "note": run.note,
            "started_at": run.started_at.isoformat(timespec="seconds"),
            "finished_at": run.finished_at.isoformat(timespec="seconds") if run.finished_at else None,
            "config": run.config or {}, "metrics": run.metrics or {}, "items": items}


def headline_line(run: EvalRun) -> dict[str, str]:
    """Per set, the few numbers a list of runs shows."""
    out = {}
    for name, m in ((run.metrics or {}).get("sets") or {}).items():
        s, j = m.get("scores", {}), m.get("judged", {})
        keys = ("hit", "rr") if run.kind == "retrieval" else ("evidence_hit", "key_terms", "refused_negative",
                                                               "refused_or_flagged", "wrongly_refused", "supported")
        parts = [f"{k}={s[k]:.3f}" for k in keys if s.get(k) is not None]
        parts += [f"{k}={v:.2f}" for k, v in j.items() if v is not None]
        out[name] = f"n={m['n']} passed={m['passed']} " + " ".join(parts)
    return out


# -- the page's background job: one run at a time
class EvalJob:
    def __init__(self):
        self._lock = threading.Lock()
        self.thread: threading.Thread | None = None
        self.run_id: int | None = None

    def busy(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def start(self, app: Flask, runtime, kind: str, spec: str, **options) -> int | None:
        """Start a run in a thread; None when one is already running."""
        with self._lock:
            if self.busy():
                return None
            run = create_run(runtime, kind, spec, limit=options.get("limit"), judge_n=options.get("judge_n", 0),
                             note=options.get("note", ""), k=options.get("k"))
            self.run_id = run.id

            def work(run_id=run.id):
                with app.app_context():
                    try:
                        execute(runtime, run_id, spec=spec, limit=options.get("limit"),
                                judge_n=options.get("judge_n", 0), k=options.get("k"))
                    finally:
                        db.session.remove()

            self.thread = threading.Thread(target=work, name=f"eval-run-{run.id}", daemon=True)
            self.thread.start()
            return run.id


def job(app: Flask) -> EvalJob:
    return app.extensions.setdefault("nistchat_eval_job", EvalJob())
