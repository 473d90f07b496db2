"""`nistchat ingest [--corpus DIR] [--rebuild]`: build (or refresh) the index under data/index."""
from __future__ import annotations

from pathlib import Path

import click

from .common import friendly_errors, cli_runtime


@click.command()
@click.option("--corpus", "corpus", type=click.Path(path_type=Path, file_okay=False),
              help="Directory of .md/.pdf files (default: NISTCHAT_CORPUS_DIR or data/corpus).")
@click.option("--rebuild", is_flag=True, help="Ignore the existing index and embedding cache; start over.")
@click.option("--quiet", is_flag=True, help="No per-file lines or progress bar; summary only.")
def ingest(corpus: Path | None, rebuild: bool, quiet: bool) -> None:
    """Read the corpus into parents/children, embed (cached) and write the dense + BM25 index."""
    from ..engine.ingest import IngestError, ingest_corpus

    runtime = cli_runtime()
    settings = runtime.settings
    corpus_dir = corpus or settings.corpus
    with friendly_errors():
        embedder = runtime.models.get("embedder")
        click.echo(f"Ingesting {corpus_dir} -> {settings.index_dir} (embedder {embedder.name})")
        try:
            summary = ingest_corpus(corpus_dir, settings.index_dir, embedder, rebuild=rebuild,
                                    log=(lambda *_: None) if quiet else click.echo, progress=not quiet)
        except IngestError as exc:
            raise click.ClickException(str(exc)) from None
    runtime.reload_index()
    state = "up to date" if summary.up_to_date else "built"
    click.echo(f"\nIndex {state} in {summary.seconds:.1f} s")
    click.echo(f"  documents: {summary.documents}")
    click.echo(f"  parents:   {summary.parents} " + _kinds(summary.parents_by_kind))
    click.echo(f"  children:  {summary.children_total} " + _kinds(summary.children))
    click.echo(f"  tables:    {summary.tables}   figures: {summary.figures}")
    if not summary.up_to_date:
        click.echo(f"  embedded:  {summary.embedded}   cache hits: {summary.cache_hits}")
    if summary.errors:
        click.echo(f"  skipped files ({len(summary.errors)}):")
        for name, message in summary.errors:
            click.echo(f"    {name}: {message}")


def _kinds(counts: dict[str, int]) -> str:
    return "(" + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + ")" if counts else ""
