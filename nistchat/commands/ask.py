"""`nistchat ask "QUESTION" [--json] [--no-stream]`: the answer pipeline in a terminal.

Streams the answer as it is generated, then sources, risk, verdicts, retry and timings; `--json`
prints the one-object contract instead. Failures are one line and exit status 1.
"""
from __future__ import annotations

import sys

import click

from .common import check_docs, friendly_errors, cli_runtime, print_json

# The contract in shared/DESIGN.md; `docs` is added only when --doc chose documents.
JSON_KEYS = ("answer", "refused", "risk", "verified", "sentences", "retried", "disclaimer", "sources", "backend",
             "timings_ms")


def _print_report(final: dict, answer_shown: bool) -> None:
    if final.get("refused"):
        click.echo(f"\n[refused: {final.get('refusal_reason') or 'not answerable'}]")
        if not answer_shown:
            click.echo(final["answer"])
    if final.get("disclaimer"):
        click.echo(f"\nNote: {final['disclaimer']}")
    click.echo("\nSources:")
    for s in final.get("sources", []):
        page = f" (p. {s['page']})" if s.get("page") is not None else ""
        mark = "*" if s.get("cited") else " "
        click.echo(f" {mark}[{s['rank']}] {s['doc']} — {s['section'] or s['title']}{page}")
    checker = [(s["rank"], text) for s in final.get("sources", []) for text in s.get("checker_sentences") or []]
    if checker:
        click.echo("Marks matched by the checker (the reader wrote none):")
        for rank, text in checker:
            click.echo(f"  [{rank}] {text}")
    if final.get("docs"):
        click.echo(f"Searched only: {', '.join(final['docs'])}")
    click.echo(f"\nRisk: {final['risk']} {', '.join(final.get('risk_kinds') or [])}".rstrip())
    if final.get("sentences"):
        click.echo(f"Verification ({'all sentences' if final.get('verified') else 'citations only'}):")
        for v in final["sentences"]:
            where = f" [{v['passage']}]" if v.get("passage") else ""
            click.echo(f"  {'✓' if v['supported'] else '✗'}{where} {v['text']}")
    if final.get("retried"):
        click.echo(f"Retried: yes (kept attempt {final.get('chosen_attempt', 1)})")
    t = final.get("timings_ms", {})
    click.echo("Timings (ms): " + ", ".join(f"{k} {v:.0f}" for k, v in t.items() if v is not None))
    backend = final.get("backend") or {}
    if backend.get("reader"):
        click.echo(f"Reader: {backend['reader']} · prompt tokens: {final.get('prompt_tokens', 0)}")


@click.command()
@click.argument("question")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object (the `ask` contract).")
@click.option("--no-stream", is_flag=True, help="Print the answer once it is complete.")
@click.option("--doc", "docs", multiple=True, metavar="DOC_ID",
              help="Search only this document (repeatable; `nistchat retrieve --list-docs` lists the ids).")
def ask(question: str, as_json: bool, no_stream: bool, docs: tuple[str, ...]) -> None:
    """Answer QUESTION from the corpus, with sources, risk class, verification and timings."""
    runtime = cli_runtime()
    stream = not (as_json or no_stream)
    final, streamed = None, {}
    with friendly_errors():
        check_docs(runtime, docs)
        events = list(_events(runtime, question, stream, streamed, list(docs)))
        for event in events:
            if event.type == "error":
                if stream and event.data.get("partial"):
                    click.echo("\n[answer incomplete]")
                raise click.ClickException(f"{event.data['kind']}: {event.data['message']}")
            if event.type == "final":
                final = event.data
    if final is None:
        raise click.ClickException("the answer stream ended without a result")
    if as_json:
        print_json({key: final.get(key) for key in JSON_KEYS} | ({"docs": final["docs"]} if final.get("docs") else {}))
        return
    shown = False
    if stream:
        click.echo()
        last = streamed.get(final.get("chosen_attempt", 0 if final["refused"] else 1), "").strip()
        shown = last == final["answer"].strip()
        if not final["refused"] and not shown:
            click.echo(f"\nFinal answer:\n{final['answer']}")
            shown = True
    elif not final["refused"]:
        click.echo(final["answer"])
        shown = True
    _print_report(final, shown)


def _events(runtime, question: str, stream: bool, streamed: dict, docs: list[str]):
    """Pass events through, printing tokens and retry notes as they arrive; stop at an error."""
    for event in runtime.answer(question, [], docs=docs):
        if event.type == "token":
            n = event.data.get("attempt", 1)
            streamed[n] = streamed.get(n, "") + event.data["text"]
            if stream:
                sys.stdout.write(event.data["text"])
                sys.stdout.flush()
        elif event.type == "retry" and stream:
            click.echo(f"\n\n[retrying: {event.data['reason']}]\n")
        yield event
        if event.type in ("error", "final"):
            return
