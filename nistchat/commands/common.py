"""What every command shares: the settings/runtime from the click context, and turning the
engine's typed errors into one clear line instead of a stack trace."""
from __future__ import annotations

import contextlib
import json
import sys

import click

from ..config import ConfigError, load_settings
from ..engine.errors import BackendError, IndexMissing
from ..engine.runtime import Runtime


def cli_runtime() -> Runtime:
    ctx = click.get_current_context()
    root = ctx.find_root()
    if not isinstance(root.obj, Runtime):
        with friendly_errors():
            root.obj = Runtime(load_settings())
    return root.obj


@contextlib.contextmanager
def friendly_errors():
    """Known failures become `Error: <message>` and exit status 1 (click's convention)."""
    try:
        yield
    except BackendError as exc:
        raise click.ClickException(exc.line) from None
    except (ConfigError, IndexMissing) as exc:
        raise click.ClickException(str(exc)) from None


def print_json(obj) -> None:
    sys.stdout.write(json.dumps(obj, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def check_docs(runtime: Runtime, docs) -> None:
    """A `--doc` choice the index does not have stops the command, listing the known ids."""
    if docs:
        problem = runtime.unknown_docs(list(docs))
        if problem:
            raise click.BadParameter(problem, param_hint="--doc")
