"""`nistchat db` (placeholder until the web app lands)."""
import click


@click.group()
def db() -> None:
    """Database migrations."""
