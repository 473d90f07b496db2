"""`nistchat eval ...`: evaluation on the golden set. Subcommands may live in other modules and be
added to `eval_group` with `eval_group.add_command(...)`."""
from __future__ import annotations

from pathlib import Path

import click

from .common import friendly_errors, cli_runtime, print_json


@click.group("eval")
def eval_group() -> None:
    """Evaluate retrieval and answers on the golden set."""


@eval_group.command("retrieval")
@click.option("--k", default=6, show_default=True, type=click.IntRange(1, 50), help="Passages per question.")
@click.option("--golden", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="Golden set JSONL (default: data/eval/golden.jsonl).")
@click.option("--mode", "modes", multiple=True, type=click.Choice(["hybrid", "dense", "bm25"]),
              help="Only these modes (default: all three, side by side).")
@click.option("--json", "as_json", is_flag=True, help="Print the full report as one JSON object.")
def retrieval(k: int, golden: Path | None, modes: tuple[str, ...], as_json: bool) -> None:
    """Evidence-hit@k, MRR, per category and latency for hybrid, dense-only and BM25-only."""
    from ..engine.evaluate import MODES, evaluate, format_table, load_golden

    runtime = cli_runtime()
    from ..config import PROJECT_ROOT

    defaults = [runtime.settings.data_dir / "eval" / "golden.jsonl", PROJECT_ROOT / "data" / "eval" / "golden.jsonl"]
    path = golden or next((p for p in defaults if p.is_file()), defaults[0])
    if not path.is_file():
        raise click.ClickException(f"No golden set at {path}.")
    try:
        items = load_golden(path)
    except ValueError as exc:
        raise click.ClickException(str(exc)) from None
    with friendly_errors():
        report = evaluate(runtime.retriever, items, k=k, modes=modes or MODES)
    report["golden"] = str(path)
    if as_json:
        print_json(report)
    else:
        click.echo(f"golden set: {path}  ({report['n_questions']} questions, {report['n_answerable']} answerable)")
        click.echo(format_table(report))
