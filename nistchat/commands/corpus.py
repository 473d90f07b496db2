"""`nistchat corpus download [--dest DIR]`: fetch the official NIST PDFs into the corpus directory."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from .common import cli_runtime


@click.group()
def corpus() -> None:
    """Manage the corpus directory."""


@corpus.command("download")
@click.option("--dest", type=click.Path(path_type=Path, file_okay=False),
              help="Where to save the PDFs (default: the corpus directory, data/corpus).")
@click.option("--timeout", "timeout_s", type=float, default=10.0, show_default=True, help="Seconds per file.")
@click.option("--force", is_flag=True, help="Download again even if the file is already there.")
def download(dest: Path | None, timeout_s: float, force: bool) -> None:
    """Download the seven NIST publications (where there is internet)."""
    from ..engine.corpus import download_corpus

    dest = dest or cli_runtime().settings.corpus
    try:
        results = download_corpus(dest, timeout_s=timeout_s, overwrite=force, log=click.echo)
    except OSError as exc:
        raise click.ClickException(f"cannot write to {dest}: {exc}") from None
    failed = [r for r in results if not r.ok]
    click.echo(f"{len(results) - len(failed)} of {len(results)} files in {dest}.")
    if failed:
        click.echo("Then run `nistchat ingest`. The cleaned markdown corpus can be used instead: "
                   "`nistchat ingest --corpus DIR`.")
        sys.exit(1)
