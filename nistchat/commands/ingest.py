"""`nistchat ingest [--corpus DIR] [--rebuild]`: build (or refresh) the index under data/index."""
from __future__ import annotations

import os
from pathlib import Path

import click

from ..engine.backends import limit_torch_threads
from .common import friendly_errors, cli_runtime


@click.command()
@click.option("--corpus", "corpus", type=click.Path(path_type=Path, file_okay=False),
              help="Directory of .md/.pdf files (default: NISTCHAT_CORPUS_DIR or data/corpus).")
@click.option("--rebuild", is_flag=True, help="Ignore the existing index and embedding cache; start over.")
@click.option("--quiet", is_flag=True, help="No per-file lines or progress bar; summary only.")
@click.option("--second", is_flag=True, help="Also build the second embedder's vectors now (8-10 min on 2 cores "
                                              "when nothing is cached; `nistchat serve` otherwise builds them "
                                              "in the background).")
def ingest(corpus: Path | None, rebuild: bool, quiet: bool, second: bool) -> None:
    """Read the corpus into parents/children, embed (cached) and write the dense + BM25 index."""
    from ..engine.index import IngestError, ingest_corpus

    runtime = cli_runtime()
    settings = runtime.settings
    corpus_dir = corpus or settings.corpus
    with friendly_errors():
        embedder = runtime.models.get("embedder")
        limit_torch_threads(os.cpu_count() or 1)  # a batch job: all cores (questions use one)
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
    if second:
        _second(settings, runtime.index)


def _second(settings, index) -> None:
    from ..engine.backends import local_model_path
    from ..engine.index import build_second as build, needs_build

    name = settings.retrieval.second_embedder
    if not name:
        raise click.ClickException("No second embedder is configured ([retrieval] second_embedder).")
    if not local_model_path(settings.models_dir, name).is_dir():
        raise click.ClickException(f"{name} is not installed: `nistchat models install --embedder {name}`.")
    if needs_build(settings.index_dir, settings.models_dir, name, index):
        build(settings.index_dir, settings.models_dir, name, log=click.echo)
    else:
        click.echo(f"  second embedder {name}: up to date (or being built by a running server)")


def _kinds(counts: dict[str, int]) -> str:
    return "(" + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + ")" if counts else ""
