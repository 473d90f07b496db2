from pathlib import Path

import pytest

from nistchat.config import ConfigError, load_settings


def write_site(tmp_path: Path, text: str) -> Path:
    (tmp_path / "config.toml").write_text(text, encoding="utf-8")
    return tmp_path


def test_defaults(tmp_path):
    s = load_settings(instance_dir=tmp_path, environ={})
    assert s.backend == "auto" and s.port == 8000
    assert s.index_dir == s.data_dir / "index"
    assert s.corpus == s.data_dir / "corpus"
    assert s.gguf_path.name == "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"


def test_instance_overrides_defaults_and_env_overrides_instance(tmp_path):
    write_site(tmp_path, 'backend = "embedded"\nport = 9001\ndata_dir = "site-data"\n')
    s = load_settings(instance_dir=tmp_path, environ={})
    assert s.backend == "embedded" and s.port == 9001
    assert s.data_dir == (tmp_path / "site-data").resolve()  # relative to the instance folder
    s = load_settings(instance_dir=tmp_path, environ={"NISTCHAT_PORT": "9100", "NISTCHAT_BACKEND": "ollama",
                                                        "NISTCHAT_GGUF": "/models/x.gguf"})
    assert s.port == 9100 and s.backend == "ollama" and s.gguf_path == Path("/models/x.gguf")


def test_broken_site_config_is_a_clear_error(tmp_path):
    write_site(tmp_path, 'backend = "embedded\n')
    with pytest.raises(ConfigError, match="config.toml: not valid TOML"):
        load_settings(instance_dir=tmp_path, environ={})


@pytest.mark.parametrize("text,match", [('backend = "gpu"\n', "backend must be"),
                                        ('port = "eighty"\n', "must be a number"),
                                        ('colour = "blue"\n', "unknown setting")])
def test_bad_values_are_rejected(tmp_path, text, match):
    write_site(tmp_path, text)
    with pytest.raises(ConfigError, match=match):
        load_settings(instance_dir=tmp_path, environ={})


def test_bad_env_backend_rejected(tmp_path):
    with pytest.raises(ConfigError):
        load_settings(instance_dir=tmp_path, environ={"NISTCHAT_BACKEND": "cloud"})
