"""`nistchat ask "QUESTION" [--json] [--no-stream]`: the answer pipeline in a terminal.

Streams the answer as it is generated, then sources, risk, verdicts, retry and timings; `--json`
prints the one-object contract instead. Failures are one line and exit status 1.
"""
from __future__ import annotations

import sys

import click

from ..engine import Answer, Error, Final, Retry, Token
from .common import check_docs, friendly_errors, cli_runtime, print_json

# The contract in docs/api.md; `docs` is added only when --doc chose documents.
JSON_KEYS = ("answer", "refused", "risk", "verified", "sentences", "retried", "disclaimer", "sources", "backend",
             "timings_ms")


def _print_report(final: Answer, answer_shown: bool) -> None:
    if final.refused:
        click.echo(f"\n[refused: {final.refusal_reason or 'not answerable'}]")
        if not answer_shown:
            click.echo(final.text)
    if final.disclaimer:
        click.echo(f"\nNote: {final.disclaimer}")
    click.echo("\nSources:")
    for s in final.sources:
        page = f" (p. {s.page})" if s.page is not None else ""
        click.echo(f" {'*' if s.cited else ' '}[{s.rank}] {s.doc} — {s.section or s.title}{page}")
    checker = [(s.rank, text) for s in final.sources for text in s.checker_sentences]
    if checker:
        click.echo("Marks matched by the checker (the reader wrote none):")
        for rank, text in checker:
            click.echo(f"  [{rank}] {text}")
    if final.docs:
        click.echo(f"Searched only: {', '.join(final.docs)}")
    click.echo(f"\nRisk: {final.risk} {', '.join(final.risk_kinds)}".rstrip())
    if final.sentences:
        click.echo(f"Verification ({'all sentences' if final.verified else 'citations only'}):")
        for v in final.sentences:
            where = f" [{v.passage}]" if v.passage else ""
            click.echo(f"  {'✓' if v.supported else '✗'}{where} {v.text}")
    if final.retried:
        click.echo(f"Retried: yes (kept attempt {final.chosen_attempt or 1})")
    click.echo("Timings (ms): " + ", ".join(f"{k} {v:.0f}" for k, v in final.timings_ms.items() if v is not None))
    if final.backend.get("reader"):
        click.echo(f"Reader: {final.backend['reader']} · prompt tokens: {final.prompt_tokens}")


def json_contract(final: Answer) -> dict:
    """`nistchat ask --json`: the contract's keys; sources without their passage text."""
    wire = final.to_dict()
    wire["sources"] = [{k: v for k, v in s.items() if k != "text"} for s in wire["sources"]]
    return {key: wire[key] for key in JSON_KEYS} | ({"docs": final.docs} if final.docs else {})


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
        for event in _events(runtime, question, stream, streamed, list(docs)):
            if isinstance(event, Error):
                if stream and event.failure.partial:
                    click.echo("\n[answer incomplete]")
                raise click.ClickException(event.failure.line)
            if isinstance(event, Final):
                final = event.answer
    if final is None:
        raise click.ClickException("the answer stream ended without a result")
    if as_json:
        print_json(json_contract(final))
        return
    shown = False
    if stream:
        click.echo()
        last = streamed.get(final.chosen_attempt or (0 if final.refused else 1), "").strip()
        shown = last == final.text.strip()
        if not final.refused and not shown:
            click.echo(f"\nFinal answer:\n{final.text}")
            shown = True
    elif not final.refused:
        click.echo(final.text)
        shown = True
    _print_report(final, shown)


def _events(runtime, question: str, stream: bool, streamed: dict, docs: list[str]):
    """Pass events through, printing tokens and retry notes as they arrive; stop at an error."""
    for event in runtime.answer(question, [], docs=docs):
        if isinstance(event, Token):
            streamed[event.attempt] = streamed.get(event.attempt, "") + event.text
            if stream:
                sys.stdout.write(event.text)
                sys.stdout.flush()
        elif isinstance(event, Retry) and stream:
            click.echo(f"\n\n[retrying: {event.reason}]\n")
        yield event
        if isinstance(event, (Error, Final)):
            return
