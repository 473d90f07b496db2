"""`/evals` (admin only): stored evaluation runs with config and headline metrics, one run's items
(filters, charts, CSV/JSONL export), two runs side by side, and starting a run as a background
job whose progress the page polls with htmx. The job's questions wait behind users' questions in
the reader queue (EVAL tickets), so chatting is never held up by more than one answer."""
from __future__ import annotations

import csv
import io
import json

from flask import Blueprint, Response, abort, current_app, redirect, render_template, request, url_for

from ..auth import admin_required
from ..config import ConfigError
from ..engine.evaluation import STAGES, compare, judges_of
from ..extensions import app_runtime, db
from ..models import EvalRun
from ..web import clean_text, db_int, is_htmx
from .store import KINDS, SET_SPECS, headline_line, job, mark_interrupted, run_dict

bp = Blueprint("evals", __name__, url_prefix="/evals")


def _run(run_id: int) -> EvalRun:
    run = db.session.get(EvalRun, run_id)
    if run is None:
        abort(404)
    return run


def _job_state() -> dict:
    j = job(current_app._get_current_object())
    run = db.session.get(EvalRun, j.run_id) if j.run_id else None
    return {"run": run, "busy": j.busy()}


@bp.get("")
@admin_required
def index():
    mark_interrupted()
    return _index_page(problem=None)


def _index_page(problem: str | None) -> str:
    runs = EvalRun.query.order_by(EvalRun.id.desc()).limit(100).all()
    return render_template("evals/index.html", runs=runs, headline=headline_line, kinds=KINDS, set_specs=SET_SPECS,
                           problem=problem, **_job_state())


@bp.get("/job")
@admin_required
def job_progress():
    return render_template("evals/_job.html", **_job_state())


@bp.post("/start")
@admin_required
def start():
    kind = request.form.get("kind", "retrieval")
    spec = request.form.get("set", "dev")
    problem = None
    if kind not in KINDS or spec not in SET_SPECS:
        problem = f"Choose a kind (retrieval or answers) and a set ({', '.join(SET_SPECS)})."
    limit = request.form.get("limit", type=db_int) or None
    judge_n = request.form.get("judge", type=db_int) or 0
    k = request.form.get("k", type=db_int) or None
    runtime = app_runtime(current_app._get_current_object())
    if not problem:
        try:
            if k and kind == "answers":
                runtime = runtime.derived({"answer": {"k": k}})
            run_id = job(current_app._get_current_object()).start(
                current_app._get_current_object(), runtime, kind, spec, limit=limit, judge_n=judge_n,
                k=k if kind == "retrieval" else None, note=clean_text(request.form.get("note", "")).strip())
            if run_id is None:
                problem = "A run is already in progress; it must finish first."
        except (ValueError, ConfigError) as exc:
            problem = str(exc)
    if is_htmx():
        return render_template("evals/_job.html", problem=problem, **_job_state()), 409 if problem else 200
    if problem:
        return _index_page(problem), 409
    return redirect(url_for("evals.index"))


def _filtered(run: EvalRun) -> tuple[list, dict]:
    args = {"set": request.args.get("set", ""), "category": request.args.get("category", ""),
            "failed": request.args.get("failed", "") == "1"}
    items = [i for i in run.items if (not args["set"] or i.set_name == args["set"])
             and (not args["category"] or i.category == args["category"]) and (not args["failed"] or not i.passed)]
    return items, args


def bars(values: dict[str, float | None], scale: float | None = None) -> list[dict]:
    """Rows for a horizontal SVG bar chart: label, value, width share (0..1)."""
    top = scale or max([v for v in values.values() if v is not None] + [1e-9])
    return [{"label": k, "value": v, "share": 0 if v is None else min(1.0, v / top)} for k, v in values.items()]


def charts(run: EvalRun) -> list[dict]:
    out = []
    for set_name, m in ((run.metrics or {}).get("sets") or {}).items():
        cats = m.get("per_category", {})
        hit_key = "hit" if run.kind == "retrieval" else "evidence_hit"
        out.append({"title": f"{set_name}: {hit_key.replace('_', ' ')} rate per category",
                    "rows": bars({c: v.get(hit_key) for c, v in cats.items() if v.get(hit_key) is not None}, 1.0)})
        if run.kind == "answers":
            refusals = {c: v.get("refused_negative", v.get("wrongly_refused")) for c, v in cats.items()}
            out.append({"title": f"{set_name}: refusal rate per category (negatives: refused as they should be)",
                        "rows": bars({c: v for c, v in refusals.items() if v is not None}, 1.0)})
        stages = m.get("stages_ms", {})
        order = [s for s in STAGES if s in stages] + [s for s in stages if s not in STAGES]
        out.append({"title": f"{set_name}: mean time per stage (ms)", "unit": "ms",
                    "rows": bars({s: stages[s] for s in order if stages[s] is not None})})
    return out


@bp.get("/<int:run_id>")
@admin_required
def detail(run_id: int):
    run = _run(run_id)
    items, args = _filtered(run)
    categories = sorted({i.category or "?" for i in run.items})
    sets = sorted({i.set_name or "?" for i in run.items})
    return render_template("evals/detail.html", run=run, items=items, args=args, categories=categories, sets=sets,
                           charts=charts(run), headline=headline_line(run),
                           judges=sorted(judges_of(run_dict(run))))


@bp.get("/<int:run_id>/export.<fmt>")
@admin_required
def export(run_id: int, fmt: str):
    run = _run(run_id)
    data = run_dict(run, full=True)
    name = f"nistchat-eval-{run.id}-{run.kind}.{fmt}"
    headers = {"Content-Disposition": f'attachment; filename="{name}"'}
    if fmt == "jsonl":
        body = "".join(json.dumps({"run": run.id, "kind": run.kind, **item}, ensure_ascii=False) + "\n"
                       for item in data["items"])
        return Response(body, mimetype="application/x-ndjson", headers=headers)
    if fmt != "csv":
        abort(404)
    metrics = sorted({m for i in data["items"] for m in i["scores"]})
    judged = sorted({m for i in data["items"] for m in i["judged"]})
    buf = io.StringIO()
    writer = csv.writer(buf)
    writer.writerow(["run", "set", "question_id", "category", "question", "passed", "ms", "answer", "refused",
                     *metrics, *[f"{m} (judged)" for m in judged], "judge"])
    for i in data["items"]:
        result = i.get("result") or {}
        writer.writerow([run.id, i["set"], i["question_id"], i["category"], i["question"], i["passed"], i["ms"],
                         result.get("answer", ""), result.get("refused", ""),
                         *[i["scores"].get(m, "") for m in metrics],
                         *[(i["judged"].get(m) or {}).get("score", "") for m in judged],
                         "; ".join(sorted({j["judge"] for j in i["judged"].values()}))])
    return Response(buf.getvalue(), mimetype="text/csv", headers=headers)


@bp.get("/compare")
@admin_required
def compare_runs():
    a, b = request.args.get("a", type=db_int), request.args.get("b", type=db_int)
    if not a or not b:
        return redirect(url_for("evals.index"))
    ra, rb = _run(a), _run(b)
    try:
        result = compare(run_dict(ra), run_dict(rb), mixed_judges=request.args.get("mixed_judges") == "1")
        problem = None
    except ValueError as exc:
        result, problem = None, str(exc)
    changed = {(i["set"], i["question_id"]) for i in (result or {}).get("items", [])}
    b_items = {(i.set_name, i.question_id): i for i in rb.items}
    rows = [{"a": i, "b": b_items.get((i.set_name, i.question_id)), "changed": (i.set_name, i.question_id) in changed}
            for i in ra.items]
    if request.args.get("changed") == "1":
        rows = [r for r in rows if r["changed"]]
    return render_template("evals/compare.html", a=ra, b=rb, result=result, problem=problem, rows=rows,
                           status=409 if problem else 200), 409 if problem else 200
