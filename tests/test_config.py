"""The one typed configuration: defaults, the site file, the environment, checks at load time,
and the generated example file."""
from pathlib import Path

import pytest

from nistchat.config import PROJECT_ROOT, ConfigError, Settings, example_toml, load_settings, schema


def write_site(tmp_path: Path, text: str) -> Path:
    (tmp_path / "config.toml").write_text(text, encoding="utf-8")
    return tmp_path


def test_defaults(tmp_path):
    s = load_settings(instance_dir=tmp_path, environ={})
    assert s.backends.backend == "auto" and s.web.port == 8000
    assert s.index_dir == s.data_dir / "index"
    assert s.corpus == s.data_dir / "corpus"
    assert s.gguf_path.name == "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    assert s.answer.context_tokens == 1800 and s.retrieval.max_per_section == 5


def test_instance_overrides_defaults_and_env_overrides_instance(tmp_path):
    write_site(tmp_path, 'data_dir = "site-data"\n[backends]\nbackend = "embedded"\n[web]\nport = 9001\n')
    s = load_settings(instance_dir=tmp_path, environ={})
    assert s.backends.backend == "embedded" and s.web.port == 9001
    assert s.data_dir == (tmp_path / "site-data").resolve()  # relative to the instance folder
    s = load_settings(instance_dir=tmp_path, environ={"NISTCHAT_PORT": "9100", "NISTCHAT_BACKEND": "ollama",
                                                        "NISTCHAT_GGUF": "/models/x.gguf"})
    assert s.web.port == 9100 and s.backends.backend == "ollama" and s.gguf_path == Path("/models/x.gguf")


def test_nested_sections_keep_what_the_site_did_not_set(tmp_path):
    write_site(tmp_path, "[retrieval.rewrite]\nenabled = true\n[verify]\nmode = \"always\"\n")
    s = load_settings(instance_dir=tmp_path, environ={})
    assert s.retrieval.rewrite.enabled is True and s.retrieval.rewrite.max_tokens == 64
    assert s.verify.mode == "always" and s.verify.max_checks == 10


def test_broken_site_config_is_a_clear_error(tmp_path):
    write_site(tmp_path, '[backends]\nbackend = "embedded\n')
    with pytest.raises(ConfigError, match="config.toml: not valid TOML"):
        load_settings(instance_dir=tmp_path, environ={})


@pytest.mark.parametrize("text,match", [
    ('[backends]\nbackend = "gpu"\n', "'backends.backend' must be one of auto, ollama, openai, embedded"),
    ('[web]\nport = "eighty"\n', "'web.port' must be a whole number"),
    ('[web]\nport = 0\n', "'web.port' must be at least 1"),
    ('colour = "blue"\n', "unknown setting colour"),
    ('[retrieval]\nrrf = 60\n', "unknown setting retrieval.rrf"),
    ('[retrieval.rewrite]\nenabled = "yes please"\n', "must be true or false"),
    ('gguf = "x"\n', r"unknown setting gguf \(at the top level; it belongs under \[backends\]"),  # an old flat file
    ('[answer]\nk = 2.5\n', "'answer.k' must be a whole number"),
    ('[verify]\nmode = "sometimes"\n', "'verify.mode' must be one of high, always, never"),
])
def test_bad_values_are_rejected_naming_the_key(tmp_path, text, match):
    write_site(tmp_path, text)
    with pytest.raises(ConfigError, match=match):
        load_settings(instance_dir=tmp_path, environ={})


def test_bad_env_values_rejected(tmp_path):
    with pytest.raises(ConfigError, match="backends.backend"):
        load_settings(instance_dir=tmp_path, environ={"NISTCHAT_BACKEND": "cloud"})
    with pytest.raises(ConfigError, match="answer.context_tokens"):
        load_settings(instance_dir=tmp_path, environ={"NISTCHAT_CONTEXT_TOKENS": "lots"})


def test_overrides_take_dotted_or_unique_names(tmp_path):
    s = load_settings(instance_dir=tmp_path, environ={}, overrides={"gguf": "qwen2.5-coder-0.5b", "verify.mode": "never"})
    assert s.backends.gguf == "qwen2.5-coder-0.5b" and s.verify.mode == "never"
    with pytest.raises(ConfigError, match="unknown setting 'nope'"):
        load_settings(instance_dir=tmp_path, environ={}, overrides={"nope": 1})


def test_every_setting_has_one_default_and_a_doc():
    keys = [key for key, _f, _t in schema()]
    assert len(keys) == len(set(keys))
    for key, f, _t in schema():
        assert f.metadata.get("doc"), key
    Settings()  # every default is constructible


def test_the_example_file_is_generated_from_the_settings():
    """instance/config.example.toml is what `python -m nistchat.config` prints; regenerate it
    after changing a setting. Uncommented, it loads and equals the defaults."""
    example = PROJECT_ROOT / "instance" / "config.example.toml"
    assert example.read_text(encoding="utf-8") == example_toml()


def test_the_example_file_uncommented_loads_as_the_defaults(tmp_path):
    lines = []
    for line in example_toml().splitlines():
        if line.startswith("# [") or (line.startswith("# ") and " = " in line.split("#")[1]):
            body = line[2:].split("    # ")[0]
            if body.startswith("[") and "#" in body:
                body = body.split("#")[0].strip()
            lines.append(body)
    write_site(tmp_path, "\n".join(line for line in lines if not line.startswith(("corpus_dir", "models_root"))))
    s = load_settings(instance_dir=tmp_path, environ={})
    default = Settings(instance_dir=tmp_path)
    for key, _f, _t in schema():
        got, want = s, default
        for part in key.split("."):
            got, want = getattr(got, part), getattr(want, part)
        if key not in ("instance_dir", "data_dir"):
            assert got == want, key


def test_database_url_defaults_to_the_sqlite_file_and_names_the_engine(tmp_path):
    from nistchat.database import PostgresDatabase, SQLiteDatabase, database_for

    settings = load_settings(instance_dir=tmp_path, environ={})
    assert settings.database_uri == f"sqlite:///{tmp_path / 'nistchat.sqlite3'}"
    assert isinstance(database_for(settings.database_uri), SQLiteDatabase)
    url = "postgresql+psycopg://nistchat:secret@db.example.org:5433/nistchat"
    chosen = load_settings(instance_dir=tmp_path, environ={"NISTCHAT_DATABASE_URL": url})
    database = database_for(chosen.database_uri)
    assert isinstance(database, PostgresDatabase) and "secret" not in database.describe()
    for bad in ("mysql://u@h/d", "not a url"):
        with pytest.raises(ConfigError, match="database_url"):
            database_for(bad)
