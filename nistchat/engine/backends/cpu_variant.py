"""Which llama.cpp build (a named, explicit set of CPU flags) this CPU gets, and whether the one
installed may run here.

Why named variants rather than `-march=native`: a native build on a VM whose CPU advertised AMX
compiled AMX kernels that the VM then faulted on, and a native build copied to an older CPU dies
with SIGILL. So there are a few variants, each an explicit list of CMake flags and the
`/proc/cpuinfo` flags it needs; the best one whose needs the CPU meets is chosen, except that the
AMX variant is never chosen unless `NISTCHAT_LLAMA_AMX=1` asks for it.

Standard library only: `scripts/build_llama.sh` runs this file before the project is installed.

    python nistchat/engine/backends/cpu_variant.py shell   # VARIANT=... FLAGS=... lines for the script
    python nistchat/engine/backends/cpu_variant.py check   # exit 1 with a message if the installed build cannot run here
"""
from __future__ import annotations

import importlib.util
import json
import os
import platform
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

RECORD_NAME = "nistchat-build.json"  # beside the installed llama_cpp package, and beside the cached wheel
AMX_ENV = "NISTCHAT_LLAMA_AMX"  # "1": the AMX variant may be chosen (off by default: it faulted on a VM)
VARIANT_ENV = "NISTCHAT_LLAMA_VARIANT"  # a variant's name: build that one whatever the CPU
REBUILD = "bash scripts/build_llama.sh .venv/bin/python"

_COMMON = "-DGGML_NATIVE=OFF -DGGML_CPU_ALL_VARIANTS=OFF -DGGML_BACKEND_DL=OFF"
_V3_CPU = {"sse4_2", "avx", "avx2", "fma", "f16c", "bmi2"}
# GGML_AVX512 compiles with -mavx512f -mavx512cd -mavx512vl -mavx512dq -mavx512bw.
_V4_CPU = _V3_CPU | {"avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw", "avx512_vnni"}
_AMX_CPU = _V4_CPU | {"avx512vbmi", "avx512_bf16", "amx_tile", "amx_int8", "amx_bf16"}


@dataclass(frozen=True)
class Variant:
    name: str
    cmake: str  # the CMake flags, exactly (the wheel cache is keyed by a hash of them)
    requires: frozenset[str] = field(default_factory=frozenset)  # /proc/cpuinfo flags it executes
    amx: bool = False

    def missing(self, cpu: set[str] | frozenset[str]) -> list[str]:
        return sorted(self.requires - set(cpu))


# Best last. The x86-64-v3 flags are the portable build's, unchanged, so its cached wheel stays valid.
X86_VARIANTS = (
    Variant("x86-64-v3",
            f"{_COMMON} -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON "
            "-DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF "
            "-DGGML_AVX512_BF16=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DLLAVA_BUILD=OFF",
            frozenset(_V3_CPU)),
    Variant("x86-64-v4-vnni",
            f"{_COMMON} -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON "
            "-DGGML_AVX_VNNI=OFF -DGGML_AVX512=ON -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=ON "
            "-DGGML_AVX512_BF16=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DLLAVA_BUILD=OFF",
            frozenset(_V4_CPU)),
    Variant("x86-64-v4-amx",
            f"{_COMMON} -DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON "
            "-DGGML_AVX_VNNI=OFF -DGGML_AVX512=ON -DGGML_AVX512_VBMI=ON -DGGML_AVX512_VNNI=ON "
            "-DGGML_AVX512_BF16=ON -DGGML_AMX_TILE=ON -DGGML_AMX_INT8=ON -DGGML_AMX_BF16=ON -DLLAVA_BUILD=OFF",
            frozenset(_AMX_CPU), amx=True),
)
GENERIC = Variant("generic", f"{_COMMON} -DLLAVA_BUILD=OFF")  # other architectures: the compiler's baseline


class VariantError(RuntimeError):
    """The installed build needs CPU features this CPU lacks, or a variant was asked for by a wrong name."""


def cpu_flags(cpuinfo: Path = Path("/proc/cpuinfo")) -> frozenset[str]:
    """The flags of the first CPU listed (an empty set where there is no /proc/cpuinfo)."""
    try:
        text = cpuinfo.read_text(errors="replace")
    except OSError:
        return frozenset()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return frozenset(value.split())
    return frozenset()


def by_name(name: str) -> Variant:
    for v in (*X86_VARIANTS, GENERIC):
        if v.name == name:
            return v
    raise VariantError(f"no llama.cpp variant named {name!r}; known: "
                       + ", ".join(v.name for v in (*X86_VARIANTS, GENERIC)))


def choose(cpu: set[str] | frozenset[str], *, machine: str = "x86_64", allow_amx: bool = False) -> Variant:
    """The best variant this CPU can run; the AMX one only when `allow_amx` (never by default)."""
    if machine not in ("x86_64", "amd64", "AMD64"):
        return GENERIC
    best = None
    for v in X86_VARIANTS:
        if v.amx and not allow_amx:
            continue
        if not v.missing(cpu):
            best = v
    # A CPU below x86-64-v3 gets the v3 build anyway, as before; the worker's check then says why it stops.
    return best or X86_VARIANTS[0]


def chosen_here(env: dict | None = None) -> Variant:
    """The variant for this machine, or the one named by NISTCHAT_LLAMA_VARIANT."""
    env = os.environ if env is None else env
    if env.get(VARIANT_ENV):
        return by_name(env[VARIANT_ENV])
    return choose(cpu_flags(), machine=platform.machine(), allow_amx=env.get(AMX_ENV, "") == "1")


def installed_record() -> dict | None:
    """The record `scripts/build_llama.sh` wrote beside the llama_cpp package on the import path
    (found without importing llama_cpp); None when there is none (a build from elsewhere)."""
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or not spec.origin:
        return None
    path = Path(spec.origin).parent / RECORD_NAME
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def check_installed(cpu: set[str] | frozenset[str] | None = None, record: dict | None = None) -> str:
    """The installed variant's name ('unrecorded' when no record); raises VariantError, in plain
    words, when it needs CPU flags this CPU lacks (a venv copied to an older machine)."""
    record = installed_record() if record is None else record
    if not record:
        return "unrecorded"
    cpu = cpu_flags() if cpu is None else cpu
    name = record.get("variant", "unrecorded")
    missing = sorted(set(record.get("requires", [])) - set(cpu))
    if cpu and missing:
        raise VariantError(f"The installed llama.cpp build is the {name!r} variant, compiled for CPU features this "
                           f"CPU lacks ({', '.join(missing)}); it would crash with an illegal instruction. "
                           f"Rebuild it for this machine: {REBUILD}")
    return name


def _record(v: Variant, key: str) -> str:
    return json.dumps({"variant": v.name, "key": key, "cmake": v.cmake, "requires": sorted(v.requires),
                       "amx": v.amx}, indent=1)


def main(argv: list[str]) -> int:
    cmd = argv[0] if argv else "shell"
    try:
        if cmd == "shell":
            v = chosen_here()
            print(f"VARIANT={shlex.quote(v.name)}\nFLAGS={shlex.quote(v.cmake)}")
        elif cmd == "record":  # record VARIANT KEY: the JSON the script writes beside the wheel and the package
            print(_record(by_name(argv[1]), argv[2]))
        elif cmd == "check":
            print(check_installed())
        else:
            print(f"unknown command {cmd!r} (shell, record VARIANT KEY, check)", file=sys.stderr)
            return 2
    except VariantError as exc:
        print(exc, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
