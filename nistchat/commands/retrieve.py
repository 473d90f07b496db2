"""`nistchat retrieve` (the passages a reader would get, as JSON or a table) and `nistchat diagnose`
(every retrieval stage replayed, so a person can see where the evidence was lost)."""
from __future__ import annotations

import textwrap
from pathlib import Path

import click

from .common import check_docs, friendly_errors, cli_runtime, print_json

MODE = click.Choice(["hybrid", "dense", "bm25"])


def _short(text: str, width: int = 90) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _print_table(result) -> None:
    click.echo(f"Q: {result.question}")
    for p in result.passages:
        page = f" p.{p.page}" if p.page else ""
        click.echo(f"{p.rank:>2}. [{p.kind}] {p.doc}{page}  {p.section}   score {p.score:.4f}")
        click.echo(f"    {p.id}")
        click.echo(textwrap.indent(textwrap.fill(_short(p.text, 400), 100), "    "))
    click.echo("timings ms: " + ", ".join(f"{k} {v:.1f}" for k, v in result.timings_ms.items()))
    for note in result.trace.notes:
        click.echo(f"note: {note}")


@click.command()
@click.argument("question", required=False)
@click.option("--json", "as_json", is_flag=True, help="One JSON object per question.")
@click.option("--k", default=6, show_default=True, type=click.IntRange(1, 50), help="Passages to return.")
@click.option("--batch", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="File with one question per line (models load once).")
@click.option("--mode", default="hybrid", show_default=True, type=MODE)
@click.option("--doc", "docs", multiple=True, metavar="DOC_ID", help="Search only this document (repeatable).")
@click.option("--list-docs", is_flag=True, help="List the indexed documents' ids and titles, then stop.")
def retrieve(question: str | None, as_json: bool, k: int, batch: Path | None, mode: str,
             docs: tuple[str, ...], list_docs: bool) -> None:
    """Retrieve the passages the reader would receive for QUESTION."""
    runtime = cli_runtime()
    if list_docs:
        with friendly_errors():
            for doc in runtime.documents():
                click.echo(f"{doc.id}\t{doc.label}")
        return
    if batch is None and not (question and question.strip()):
        raise click.UsageError("give a QUESTION or --batch FILE")
    questions = ([q.strip() for q in batch.read_text(encoding="utf-8").splitlines() if q.strip()]
                 if batch else [question])
    with friendly_errors():
        check_docs(runtime, docs)
        for q in questions:
            result = runtime.retrieve(q, k=k, mode=mode, docs=list(docs))
            if as_json:
                print_json(result.to_dict())
            else:
                _print_table(result)
                click.echo("")


@click.command()
@click.argument("question")
@click.option("--k", default=6, show_default=True, type=click.IntRange(1, 50))
@click.option("--mode", default="hybrid", show_default=True, type=MODE)
@click.option("--top", default=12, show_default=True, type=click.IntRange(1, 50), help="Rows per list.")
def diagnose(question: str, k: int, mode: str, top: int) -> None:
    """Replay every retrieval stage for QUESTION: lists, fusion cut, rerank, parents, context."""
    from ..engine.text import count_tokens

    runtime = cli_runtime()
    with friendly_errors():
        result = runtime.retrieve(question, k=k, mode=mode)
        models = runtime.models
    trace = result.trace
    echo = click.echo

    def header(n: int, title: str, stage=None) -> None:
        ms = f"  ({stage.ms:.1f} ms)" if stage is not None else ""
        echo(f"\n== {n}. {title}{ms}")
        if stage is not None and stage.note:
            echo(f"   {stage.note}")

    q = trace.stage("query")
    header(1, "query", q)
    if q and q.items:
        for key, value in q.items[0].items():
            echo(f"   {key}: {value}")
    header(2, "embed", trace.stage("embed"))
    for n, name in ((3, "dense"), (4, "bm25")):
        stage = trace.stage(name)
        header(n, f"{name} top {top}", stage)
        if stage is None:
            echo("   (not run in this mode)")
            continue
        for it in stage.items[:top]:
            echo(f"   {it['rank']:>2}  {it['score']:>9.4f}  {it['child']:<40} {_short(it['text'], 70)}")
    fuse = trace.stage("fuse")
    header(5, "fusion (rank in each list; '---' marks the rerank window cut)", fuse)
    cut_shown = False
    for it in (fuse.items if fuse else [])[: max(top, 20)]:
        if not it["in_window"] and not cut_shown:
            echo("   " + "-" * 60)
            cut_shown = True
        ranks = " ".join(f"{k}={v}" for k, v in it["ranks"].items())
        echo(f"   {it['rank']:>2}  {it['score']:>8.5f}  {ranks:<20} {it['child']:<40} {_short(it['text'], 50)}")
    rr = trace.stage("rerank")
    header(6, "rerank", rr)
    if rr and rr.items:
        for i, it in enumerate(rr.items, start=1):
            echo(f"   {i:>2}  {it['score']:>8.4f}  {it['child']}")
    elif rr:
        echo(f"   no rerank scores: {models.reason_missing('reranker')}")
    caps = trace.stage("caps")
    header(7, "diversity caps", caps)
    for it in (caps.items if caps else []):
        echo(f"   {it['action']:<17} {it['parent']}  {it.get('section', it.get('into', ''))}")
    if caps and not caps.items:
        echo("   nothing capped or merged")
    ex = trace.stage("expand")
    header(8, "parents (with neighbours)", ex)
    for it in (ex.items if ex else []):
        echo(f"   {it['rank']:>2}. {it['parent']} [{it['kind']}] {it['section']}")
        echo(f"       hits: {', '.join(it['hits'])}   tokens: {it['tokens']}{' (trimmed)' if it['trimmed'] else ''}")
        pulled = [p for p in it["pieces"] if p != it["parent"]]
        if pulled:
            echo(f"       also in this passage (table segments, split prose, announced list): {', '.join(pulled)}")
        echo(f"       prev: {it['prev']}  next: {it['next']}  neighbours: {', '.join(it['neighbours']) or '-'}")
    total = sum(count_tokens(p.text) for p in result.passages)
    header(9, f"assembled context: {len(result.passages)} passages, ~{total} tokens "
              f"(budget {runtime.settings.answer.context_tokens})")
    for p in result.passages:
        echo(f"\n[{p.rank}] {p.doc} | {p.section} | {p.kind}{f' | p.{p.page}' if p.page else ''}")
        echo(textwrap.indent(p.text, "    "))
    echo("\ntimings ms: " + ", ".join(f"{k} {v:.1f}" for k, v in result.timings_ms.items()))
