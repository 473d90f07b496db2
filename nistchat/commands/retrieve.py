"""`nistchat retrieve` and `nistchat diagnose` (placeholder until retrieval lands)."""
import click


@click.command()
def retrieve() -> None:
    """Retrieve passages for a question."""
    raise click.ClickException("retrieval is not built yet")


@click.command()
def diagnose() -> None:
    """Replay every retrieval stage."""
    raise click.ClickException("retrieval is not built yet")
