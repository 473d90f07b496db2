"""`nistchat admin set-password`: turn on the admin login in one step. The password is asked for
twice (or read from standard input) and only its hash is written, into instance/config.toml under
`[web]`, with the file's mode set to 600; the rest of the file is kept as it was."""
from __future__ import annotations

import os
import re
import sys
import tempfile
import tomllib
from pathlib import Path

import click
from werkzeug.security import generate_password_hash

from ..config import PROJECT_ROOT, ConfigError, load_settings

MIN_LENGTH = 8
_TABLE = re.compile(r"^\s*\[")
_WEB = re.compile(r"^\s*\[web\]\s*(#.*)?$")
_KEY = re.compile(r"^\s*admin_password_hash\s*=")


def with_admin_hash(text: str, password_hash: str) -> str:
    """`text` (a config.toml) with `[web] admin_password_hash` set; everything else unchanged."""
    line = f'admin_password_hash = "{password_hash}"'
    lines = text.splitlines()
    start = next((i for i, row in enumerate(lines) if _WEB.match(row)), None)
    if start is None:
        body = "\n".join(lines).rstrip("\n")
        return (body + "\n\n" if body else "") + f"[web]\n{line}\n"
    end = next((i for i in range(start + 1, len(lines)) if _TABLE.match(lines[i])), len(lines))
    found = next((i for i in range(start + 1, end) if _KEY.match(lines[i])), None)
    if found is None:
        lines.insert(start + 1, line)
    else:
        lines[found] = line
    return "\n".join(lines) + "\n"


def write_private(path: Path, text: str) -> None:
    """Replace `path` atomically with a file only its owner can read (mode 600)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")  # mode 600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    finally:
        Path(tmp).unlink(missing_ok=True)
    os.chmod(path, 0o600)


def read_password(from_stdin: bool) -> str:
    if from_stdin or not sys.stdin.isatty():
        return sys.stdin.readline().rstrip("\r\n")
    return click.prompt("New admin password", hide_input=True, confirmation_prompt=True)


@click.group()
def admin() -> None:
    """Site administration."""


@admin.command("set-password")
@click.option("--stdin", "from_stdin", is_flag=True, help="Read the password from standard input (one line).")
def set_password(from_stdin: bool) -> None:
    """Set the admin password: its hash goes into instance/config.toml ([web], mode 600)."""
    instance = Path(os.environ.get("NISTCHAT_INSTANCE_DIR") or PROJECT_ROOT / "instance")
    path = instance / "config.toml"
    password = read_password(from_stdin)
    if len(password) < MIN_LENGTH:
        raise click.ClickException(f"The password must be at least {MIN_LENGTH} characters long.")
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    password_hash = generate_password_hash(password)
    new = with_admin_hash(old, password_hash)
    try:
        if tomllib.loads(new)["web"]["admin_password_hash"] != password_hash:
            raise ValueError("the hash did not land under [web]")
    except (tomllib.TOMLDecodeError, ValueError, KeyError) as exc:
        raise click.ClickException(f"{path} could not be updated ({exc}); it was left as it was.") from None
    write_private(path, new)
    click.echo(f"Admin password set: its hash is in {path} (mode 600). Restart the server, then log in at /admin.")
    if os.environ.get("NISTCHAT_ADMIN_PASSWORD_HASH"):
        click.echo("Note: NISTCHAT_ADMIN_PASSWORD_HASH is set in this environment and takes precedence; unset it.")
    try:
        load_settings(instance)
    except ConfigError as exc:
        click.echo(f"Note: the configuration has another problem: {exc}")
