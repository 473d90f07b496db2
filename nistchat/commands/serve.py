"""`nistchat serve`: upgrade the database, then serve the app with waitress.

Each streaming answer holds one waitress thread for its whole duration, so the default of 4
threads would make a fifth user wait for a free thread before even seeing their question;
we run 16 by default. Streams send a heartbeat, and channel_timeout is generous, so a long
answer (queued behind others on a 2-core machine) is not cut off.
"""
from __future__ import annotations

import socket
import threading
import time

import click

from .db import make_app


def lan_address() -> str:
    """Best guess at this machine's LAN address, for the URL we print (no packets are sent)."""
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
            s.connect(("10.255.255.255", 1))
            return s.getsockname()[0]
    except OSError:
        return "127.0.0.1"


def _self_test(runtime, app=None) -> None:
    """In the background, so the site serves at once; a reader crash here ends the worker only.
    Then one retrieval loads the index and warms the embedder, which would otherwise make the
    first person's question wait for it, and the document viewer renders every document once, so
    the first citation opens as fast as the next."""
    click.echo("self-test: one embedding and a one-token answer (the reader process starts now)")
    # in its turn with the reader, as an answer: beside a person's answer its one token waited
    # behind it, ran out of time, and the restart that follows a timeout cut that answer off
    with runtime.queue.turn("self-test"):
        result = runtime.models.self_test()
    click.echo(self_test_lines(result))
    try:
        t = time.perf_counter()
        runtime.retrieve("warm-up: how are AI risks managed?")
        if runtime.small_talk is not None:  # its examples are embedded once, here, not at the first greeting
            runtime.small_talk.classify("hello")
        click.echo(f"warm-up: index, embedder and small talk ready in {time.perf_counter() - t:.1f} s")
        if app is not None:
            from ..docs.service import warm_up

            click.echo(f"warm-up: {warm_up(app)} documents rendered for the viewer")
    except Exception as exc:  # the status page shows an index problem; serving goes on
        click.echo(f"warm-up: retrieval failed: {exc}")
        return
    _build_second_dense(runtime)


def _build_second_dense(runtime) -> None:
    """The second embedder's vectors, in a low-priority child process when missing or stale
    (engine/index/second.py); retrieval starts using them when they are written."""
    from ..engine.index import start_build

    settings = runtime.settings
    name = settings.retrieval.second_embedder
    if not name:
        return
    try:
        process = start_build(settings.index_dir, settings.models_dir, name, runtime.index, log=click.echo,
                              yield_to_answers=settings.background.yield_to_answers,
                              max_pause_s=settings.background.max_pause_s)
    except Exception as exc:  # retrieval goes on without it; /status says why
        click.echo(f"second embedder {name}: cannot start its build: {exc}")
        return
    if process is not None:
        threading.Thread(target=process.wait, name="second-dense-build", daemon=True).start()


def self_test_lines(result: dict) -> str:
    lines = [f"self-test: {result['state']}"]
    for role, r in result.get("roles", {}).items():
        rate = f", reads {r['prefill_tokens_per_s']} prompt tokens/s" if r.get("prefill_tokens_per_s") else ""
        lines.append(f"  {role}: ok in {r['ms']} ms{rate}" if r["ok"] else f"  {role}: FAILED: {r['error']}  Fix: {r['fix']}")
    return "\n".join(lines)


@click.command()
@click.option("--host", default="0.0.0.0", show_default=True, help="Interface to listen on.")
@click.option("--port", type=int, default=None, help="Port (default: NISTCHAT_PORT or 8000).")
@click.option("--threads", type=int, default=16, show_default=True, help="waitress worker threads (one per open stream).")
@click.option("--channel-timeout", type=int, default=900, show_default=True, help="Seconds a silent connection may stay open.")
def serve(host: str, port: int | None, threads: int, channel_timeout: int) -> None:
    """Serve the web app with waitress (database upgraded first)."""
    from waitress import serve as waitress_serve

    from ..app import startup_warnings, upgrade_database
    app = make_app()
    settings = app.config["SETTINGS"]
    port = port or settings.web.port  # NISTCHAT_PORT is read into settings
    from ..extensions import app_database, app_runtime
    backup = upgrade_database(app, backup_dir=settings.backup_dir)
    if backup is not None:
        click.echo(f"database: backed up to {backup} before upgrading")
    click.echo(f"database: {app_database(app).describe()} (up to date)")
    for warning in startup_warnings(settings):
        click.echo(f"warning: {warning}")
    try:
        runtime = app_runtime(app)
        for role in runtime.models.describe():
            unavailable = f" (unavailable: {role['error']})" if role["error"] else ""
            click.echo(f"{role['role']:>9}: {role['backend']} {role['model']} ({role['reason']}){unavailable}")
        from ..engine.background import AnswerFlag

        runtime.queue.on_chat_active(AnswerFlag(settings.index_dir).set)  # background builds pause meanwhile
        threading.Thread(target=_self_test, args=(runtime, app), name="self-test", daemon=True).start()
    except Exception as exc:  # the page shows the same problem on /status
        click.echo(f"models: cannot plan backends: {exc}")
    shown = lan_address() if host in ("0.0.0.0", "::") else host
    click.echo(f"NISTChat on http://{shown}:{port}/  (listening on {host}:{port}, {threads} threads)")
    waitress_serve(app, host=host, port=port, threads=threads, channel_timeout=channel_timeout,
                   **waitress_options(settings))


def waitress_options(settings) -> dict:
    """waitress drops X-Forwarded-* headers it was not told to trust; behind a proxy
    (`web.proxy_count`) the app's ProxyFix reads them, so they must reach it: else every client
    had nginx's address (one rate limit for all) and the scheme was lost."""
    return {"ident": "NISTChat", "clear_untrusted_proxy_headers": not settings.web.proxy_count}
