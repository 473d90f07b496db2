"""`nistchat` command line: one click group; each command lives in nistchat/commands/."""
from __future__ import annotations

import click

from .commands import admin, ask, audit, corpus, db, evaluate, ingest, models, retrieve, serve


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """NISTChat: cited, verified answers from seven NIST AI publications, entirely on this machine."""


for command in (models.models, corpus.corpus, ingest.ingest, retrieve.retrieve, retrieve.diagnose, ask.ask, audit.audit,
                evaluate.eval_group, serve.serve, db.db, admin.admin):
    main.add_command(command)


if __name__ == "__main__":
    main()
