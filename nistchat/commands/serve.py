"""`nistchat serve` (placeholder until the web app lands)."""
import click


@click.command()
def serve() -> None:
    """Serve the web app with waitress."""
    raise click.ClickException("the web app is not built yet")
