"""`nistchat admin set-password` (nistchat/commands/admin.py): one step from a fresh install to a
working admin login, with the hash (never the password) in instance/config.toml, mode 600."""
from __future__ import annotations

import stat
import tomllib

from click.testing import CliRunner
from werkzeug.security import check_password_hash

from nistchat.app import create_app, startup_warnings, upgrade_database
from nistchat.cli import main
from nistchat.commands.admin import with_admin_hash
from nistchat.config import load_settings

from .conftest import make_settings
from .web_support import post

PASSWORD = "a long enough password"


def set_password(tmp_path, text: str, *args):
    return CliRunner().invoke(main, ["admin", "set-password", *args], input=text,
                              env={"NISTCHAT_INSTANCE_DIR": str(tmp_path / "instance"),
                                   "NISTCHAT_ADMIN_PASSWORD_HASH": ""})


def test_set_password_writes_the_hash_with_mode_600_and_the_login_works(tmp_path, light_runtime):
    result = set_password(tmp_path, PASSWORD + "\n", "--stdin")
    assert result.exit_code == 0, result.output
    path = tmp_path / "instance" / "config.toml"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert PASSWORD not in path.read_text() and "Restart the server" in result.output
    stored_hash = tomllib.loads(path.read_text())["web"]["admin_password_hash"]
    assert check_password_hash(stored_hash, PASSWORD)
    assert load_settings(tmp_path / "instance", environ={}).web.admin_password_hash == stored_hash
    settings = make_settings(tmp_path)  # reads tmp_path/instance/config.toml, as `serve` would
    assert settings.web.admin_password_hash == stored_hash
    app = create_app({"SETTINGS": settings, "RUNTIME": light_runtime})
    upgrade_database(app)
    client = app.test_client()
    assert post(client, "/admin/login", {"password": PASSWORD}, token_from="/admin").status_code == 302


def test_set_password_keeps_the_rest_of_the_file_and_replaces_an_old_hash(tmp_path):
    path = tmp_path / "instance" / "config.toml"
    path.parent.mkdir()
    path.write_text('# site config\n[web]\nport = 8080\nadmin_password_hash = "old"\n\n[answer]\nk = 5\n')
    assert set_password(tmp_path, PASSWORD + "\n", "--stdin").exit_code == 0
    data = tomllib.loads(path.read_text())
    assert data["web"]["port"] == 8080 and data["answer"]["k"] == 5 and data["web"]["admin_password_hash"] != "old"
    assert path.read_text().startswith("# site config\n") and path.read_text().count("admin_password_hash") == 1


def test_a_short_password_is_refused_and_nothing_written(tmp_path):
    result = set_password(tmp_path, "short\n", "--stdin")
    assert result.exit_code == 1 and "at least 8" in result.output
    assert not (tmp_path / "instance" / "config.toml").exists()


def test_the_hash_is_added_to_a_file_without_a_web_table():
    assert with_admin_hash("", "h") == '[web]\nadmin_password_hash = "h"\n'
    assert tomllib.loads(with_admin_hash("[answer]\nk = 5\n", "h")) == {"answer": {"k": 5},
                                                                         "web": {"admin_password_hash": "h"}}
    assert tomllib.loads(with_admin_hash("[web]\nport = 1\n[queue]\nmax_waiting = 3\n", "h"))["web"] == \
        {"admin_password_hash": "h", "port": 1}


def test_serving_without_an_admin_password_says_how_to_set_one(tmp_path):
    assert any("nistchat admin set-password" in w for w in startup_warnings(make_settings(tmp_path)))
    with_hash = make_settings(tmp_path, admin_password_hash="x", allowed_hosts=["localhost"])
    assert not startup_warnings(with_hash)
