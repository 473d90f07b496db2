"""`nistchat corpus download` (owned by the ingestion work; placeholder until it lands)."""
import click


@click.group()
def corpus() -> None:
    """Manage the corpus directory."""
