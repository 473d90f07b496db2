"""`nistchat ask` (placeholder until the answer pipeline lands)."""
import click


@click.command()
def ask() -> None:
    """Answer a question."""
    raise click.ClickException("the answer pipeline is not built yet")
