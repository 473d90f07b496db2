"""`nistchat audit --question Q --answer A [--json]`: check an answer written elsewhere against the
publications (engine/verification/audit.py), and `--pairs FILE` to measure it on faithful/changed answer pairs."""
from __future__ import annotations

import json
from pathlib import Path

import click

from .common import check_docs, cli_runtime, friendly_errors, print_json


def _print(result) -> None:
    click.echo(f"Trust score: {result.trust_score:.2f} — {result.label}")
    for s in result.sentences:
        mark = {"supported": "✓", "contradicted": "✗", "not found": "?"}[s.verdict]
        click.echo(f"\n {mark} {s.verdict} ({s.score:.2f}) {s.text}")
        if s.reason:
            click.echo(f"     {s.reason}")
        if s.passage:
            p = s.passage
            page = f" p. {p['page']}" if p.get("page") is not None else ""
            click.echo(f"     source: {p['doc']}, {p['section']}{page}")
            for sentence in s.support[:2]:
                click.echo(f"     > {sentence[:300]}")
    click.echo(f"\nModels: {', '.join(f'{k} {v}' for k, v in result.models.items())}")
    click.echo(result.method)


@click.command()
@click.option("--question", "-q", default="", help="The question the answer was given to.")
@click.option("--answer", "-a", default="", help="The answer to check (from another tool or a person).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object: trust_score, label, sentences, ...")
@click.option("--doc", "docs", multiple=True, metavar="DOC_ID", help="Check against this document only (repeatable).")
@click.option("--no-judge", is_flag=True, help="Deterministic signals only; never call the verifier model.")
@click.option("--pairs", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="JSON lines of {question, faithful, changed}: report how often the faithful answer scores higher.")
def audit(question: str, answer: str, as_json: bool, docs: tuple[str, ...], no_judge: bool, pairs: Path | None) -> None:
    """Check a pasted ANSWER against the NIST publications, sentence by sentence, with a trust score."""
    from ..engine.verification import audit as run_audit, measure_pairs

    runtime = cli_runtime()
    with friendly_errors():
        if pairs is not None:
            rows = [json.loads(line) for line in pairs.read_text(encoding="utf-8").splitlines() if line.strip()]
            report = measure_pairs(runtime, rows, judge=not no_judge,
                                   log=None if as_json else lambda r: click.echo(
                                       f"{r['id']} {r['change']:<9} faithful {r['faithful']:.3f}  "
                                       f"changed {r['changed']:.3f}  {'ok' if r['higher'] else 'MISS'}"))
            if as_json:
                print_json(report)
            else:
                click.echo(f"faithful higher in {report['faithful_higher']} of {report['pairs']} pairs "
                           f"({report['share']:.0%})")
            return
        if not question.strip() or not answer.strip():
            raise click.UsageError("give --question and --answer (or --pairs FILE)")
        check_docs(runtime, docs)
        result = run_audit(runtime, question, answer, docs=list(docs), judge=not no_judge)
    if as_json:
        print_json(result.to_dict())
    else:
        _print(result)
