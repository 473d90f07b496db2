"""`nistchat eval` (placeholder until retrieval evaluation lands)."""
import click


@click.group("eval")
def eval_group() -> None:
    """Evaluate retrieval and answers on the golden set."""
