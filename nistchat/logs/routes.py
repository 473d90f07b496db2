"""`/logs.csv` and `/logs.jsonl` with `?from=&to=` (server-local dates, inclusive; default today): your own
messages, or with `?scope=all` (admins only; their default) everyone's."""
from __future__ import annotations

from flask import Blueprint, Response, request, stream_with_context

from ..web import render_error
from .export import BadRange, csv_lines, date_range, jsonl, log_scope, records

bp = Blueprint("logs", __name__)


def log_response(fmt: str) -> Response:
    owner = log_scope()
    try:
        first, last = date_range(request.args.get("from"), request.args.get("to"))
    except BadRange as exc:
        return render_error(str(exc), 400, "Bad date range")
    rows = records(first, last, owner)
    name = f"nistchat_{first:%Y%m%d}" + (f"-{last:%Y%m%d}" if last != first else "")
    if fmt == "csv":
        body, mimetype, name = csv_lines(rows), "text/csv; charset=utf-8", name + ".csv"
    else:
        body, mimetype, name = jsonl(rows), "application/x-ndjson; charset=utf-8", name + ".jsonl"
    return Response(stream_with_context(body), mimetype=mimetype,
                    headers={"Content-Disposition": f'attachment; filename="{name}"'})


@bp.get("/logs.csv")
def csv_log():
    return log_response("csv")


@bp.get("/logs.jsonl")
def jsonl_log():
    return log_response("jsonl")
