"""Which llama.cpp variant a CPU gets: the AMX kernels that faulted on a VM never come back by
default, a CPU gets only flags it has, and a build for flags the CPU lacks is refused at start."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import pytest

from nistchat.engine.backends import cpu_variant as cv
from nistchat.engine.errors import Unreachable
from tests.conftest import REPO

V3 = {"sse4_2", "avx", "avx2", "fma", "f16c", "bmi2"}
SKYLAKE_X = V3 | {"avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw"}  # AVX-512 without VNNI
CASCADE_LAKE = SKYLAKE_X | {"avx512_vnni"}
SAPPHIRE_RAPIDS = CASCADE_LAKE | {"avx512vbmi", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_int8", "amx_bf16"}


def test_a_cpu_reporting_amx_does_not_get_amx_kernels_by_default():
    v = cv.choose(SAPPHIRE_RAPIDS)
    assert v.name == "x86-64-v4-vnni" and not v.amx
    for flag in ("-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF", "-DGGML_AMX_BF16=OFF"):
        assert flag in v.cmake.split()
    assert cv.choose(SAPPHIRE_RAPIDS, allow_amx=True).amx  # only when asked for


def test_the_amx_setting_is_read_only_as_an_explicit_one(monkeypatch):
    monkeypatch.setattr(cv, "cpu_flags", lambda: frozenset(SAPPHIRE_RAPIDS))
    monkeypatch.setattr(cv.platform, "machine", lambda: "x86_64")
    assert cv.chosen_here({}).name == "x86-64-v4-vnni"
    assert cv.chosen_here({cv.AMX_ENV: "yes"}).name == "x86-64-v4-vnni"  # "1" and nothing else turns it on
    assert cv.chosen_here({cv.AMX_ENV: "1"}).name == "x86-64-v4-amx"
    assert cv.chosen_here({cv.VARIANT_ENV: "x86-64-v3"}).name == "x86-64-v3"
    with pytest.raises(cv.VariantError, match="no llama.cpp variant named"):
        cv.chosen_here({cv.VARIANT_ENV: "native"})


@pytest.mark.parametrize("cpu, expected", [
    (V3, "x86-64-v3"), (SKYLAKE_X, "x86-64-v3"), (CASCADE_LAKE, "x86-64-v4-vnni"),
    (V3 - {"avx2"}, "x86-64-v3"),  # below the baseline: v3 as before, refused by the worker's check
])
def test_each_cpu_gets_the_best_variant_whose_flags_it_has(cpu, expected):
    assert cv.choose(cpu).name == expected
    assert cv.choose(cpu, machine="aarch64").name == "generic"


def test_every_variant_names_its_flags_and_none_is_native():
    for v in (*cv.X86_VARIANTS, cv.GENERIC):
        flags = v.cmake.split()
        assert "-DGGML_NATIVE=OFF" in flags and "-march=native" not in v.cmake
        assert ("-DGGML_AMX_INT8=ON" in flags) == v.amx


def test_a_build_for_flags_this_cpu_lacks_is_refused_in_words():
    record = {"variant": "x86-64-v4-vnni", "requires": sorted(cv.by_name("x86-64-v4-vnni").requires)}
    assert cv.check_installed(CASCADE_LAKE, record) == "x86-64-v4-vnni"
    with pytest.raises(cv.VariantError) as refused:
        cv.check_installed(V3, record)
    assert "avx512_vnni" in str(refused.value) and "build_llama.sh" in str(refused.value)
    assert cv.check_installed(V3, {}) == "unrecorded"  # a build from elsewhere: nothing to check against


def test_the_script_gets_shell_assignments_and_records():
    script = REPO / "nistchat" / "engine" / "backends" / "cpu_variant.py"
    env = {**os.environ, cv.VARIANT_ENV: "x86-64-v3"}
    out = subprocess.run([sys.executable, "-I", str(script), "shell"], env=env, capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.startswith("VARIANT=x86-64-v3\nFLAGS='-DGGML_NATIVE=OFF")
    out = subprocess.run([sys.executable, "-I", str(script), "record", "x86-64-v4-vnni", "abc"],
                         capture_output=True, text=True)
    assert json.loads(out.stdout)["requires"] == sorted(cv.by_name("x86-64-v4-vnni").requires)


def test_the_worker_refuses_a_build_for_flags_this_cpu_lacks(tmp_path, monkeypatch):
    """The real worker and the real llama_cpp package, seen through a folder whose record says it
    was built for a CPU feature this one lacks (what a venv copied to an older machine holds)."""
    from nistchat.engine.backends.supervisor import ReaderWorker
    installed = importlib.util.find_spec("llama_cpp")
    if installed is None:
        pytest.skip("llama_cpp is not installed")
    lacking = sorted(cv.by_name("x86-64-v4-amx").requires - cv.cpu_flags()) or ["a_flag_no_cpu_has"]
    pkg = tmp_path / "llama_cpp"
    pkg.mkdir()
    real = os.path.dirname(installed.origin)
    for name in os.listdir(real):
        if name != cv.RECORD_NAME:
            (pkg / name).symlink_to(os.path.join(real, name))
    (pkg / cv.RECORD_NAME).write_text(json.dumps({"variant": "x86-64-v4-amx", "requires": lacking}))
    monkeypatch.setenv("PYTHONPATH", f"{tmp_path}{os.pathsep}{REPO}")
    worker = ReaderWorker(tmp_path / "unused.gguf", retry_after_s=0)
    (tmp_path / "unused.gguf").write_bytes(b"")  # the variant is refused before any model is read
    try:
        with pytest.raises(Unreachable) as refused:
            worker.ensure()
    finally:
        worker.stop()
    assert lacking[0] in refused.value.message and "build_llama.sh" in refused.value.message
    assert "cannot run on this machine" in refused.value.message


def test_the_in_process_reader_refuses_it_too(tmp_path, monkeypatch):
    """reader_process = "inprocess" loads llama.cpp into the caller: the same check runs first."""
    from nistchat.engine.backends.embedded import LlamaCppReader
    lacking = sorted(cv.by_name("x86-64-v4-amx").requires - cv.cpu_flags()) or ["a_flag_no_cpu_has"]
    monkeypatch.setattr(cv, "installed_record", lambda: {"variant": "x86-64-v4-amx", "requires": lacking})
    model = tmp_path / "unused.gguf"
    model.write_bytes(b"")
    with pytest.raises(Unreachable, match="build_llama.sh"):
        LlamaCppReader(model)


@pytest.mark.slow  # the first run compiles llama-server (several minutes on 2 cores); later runs reuse it
def test_llama_server_is_built_for_this_cpus_variant_with_the_wheels_flags_and_cached_under_their_key():
    from tests.openai_server import llama_server_binary

    binary = llama_server_binary()
    chosen = cv.chosen_here()
    record = json.loads((binary.parent / cv.RECORD_NAME).read_text())
    assert record["variant"] == chosen.name and record["cmake"] == chosen.cmake  # explicit flags, never native
    assert "-march=native" not in record["cmake"] and "-DGGML_NATIVE=OFF" in record["cmake"].split()
    assert binary.parent.name.endswith(f"-{record['key']}")  # a change of flags is a new folder, a new build
    version = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60)
    assert version.returncode == 0 and "version" in (version.stdout + version.stderr)
    assert llama_server_binary() == binary  # the second call finds it in the cache
