"""`nistchat ingest` (placeholder until the ingestion work lands)."""
import click


@click.command()
def ingest() -> None:
    """Build the index from the corpus."""
    raise click.ClickException("ingestion is not built yet")
