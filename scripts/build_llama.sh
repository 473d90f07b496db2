#!/usr/bin/env bash
# Install llama-cpp-python built for a named CPU variant with explicit flags, never -march=native.
#
# Why: a native build (-march=native) on a VM whose CPU advertises AMX compiled AMX kernels that
# the VM then faulted on (SIGSEGV in ggml_backend_amx_mul_mat), and a native build copied to an
# older CPU dies with SIGILL. nistchat/engine/backends/cpu_variant.py names the variants and
# chooses by /proc/cpuinfo's flags: x86-64-v3 (AVX2 + FMA + F16C + BMI2: every x86 server CPU
# since 2013-2015) or x86-64-v4-vnni (adds AVX-512 F/CD/BW/DQ/VL and AVX512_VNNI). The AMX
# variant is chosen only with NISTCHAT_LLAMA_AMX=1; NISTCHAT_LLAMA_VARIANT=NAME builds NAME
# whatever the CPU. Other architectures get GGML_NATIVE=OFF (the compiler's baseline).
#
# pip's wheel cache is keyed by the sdist, not by CMAKE_ARGS, so a wheel built earlier with other
# flags would be reused silently. The wheel is therefore built into a folder named after a hash of
# the flags, and installed from there: changing the flags forces a rebuild, reusing them does not.
# The variant's record (nistchat-build.json: name, flags, the CPU flags it needs) lies beside the
# wheel and beside the installed llama_cpp package, where the reader worker checks it at start.
#
# Usage: scripts/build_llama.sh PYTHON [TARGET]   (the venv's python; TARGET: install there with
#        pip --target instead of into the venv, e.g. to compare variants side by side)
set -euo pipefail
PY=${1:-.venv/bin/python}
TARGET=${2:-}
VERSION=0.3.36
CHOOSER="$(cd "$(dirname "$0")/.." && pwd)/nistchat/engine/backends/cpu_variant.py"
eval "$("$PY" -I "$CHOOSER" shell)"   # sets VARIANT and FLAGS
FLAGS=$(echo "$FLAGS" | tr -s ' ')
KEY=$(printf '%s %s %s' "$VERSION" "$(uname -m)" "$FLAGS" | sha256sum | cut -c1-12)
WHEELS="${XDG_CACHE_HOME:-$HOME/.cache}/nistchat/wheels/llama-cpp-python-$VERSION-$KEY"
if ! ls "$WHEELS"/llama_cpp_python-*.whl >/dev/null 2>&1; then
  echo "    building llama-cpp-python $VERSION, variant $VARIANT ($FLAGS); once, a few minutes on 2 cores"
  mkdir -p "$WHEELS.tmp"
  CMAKE_ARGS="$FLAGS" FORCE_CMAKE=1 "$PY" -m pip wheel --quiet --no-deps --no-cache-dir \
      --no-binary llama-cpp-python -w "$WHEELS.tmp" "llama-cpp-python==$VERSION"
  rm -rf "$WHEELS"; mv "$WHEELS.tmp" "$WHEELS"
fi
"$PY" -I "$CHOOSER" record "$VARIANT" "$KEY" > "$WHEELS/nistchat-build.json"
if [ -n "$TARGET" ]; then
  "$PY" -m pip install --quiet --no-deps --upgrade --target "$TARGET" "$WHEELS"/llama_cpp_python-*.whl
  cp "$WHEELS/nistchat-build.json" "$TARGET/llama_cpp/nistchat-build.json"
  echo "    variant $VARIANT installed in $TARGET"
  exit 0
fi
# The venv records which build it holds: a venv made before (say, with a native build) is replaced.
MARK="$("$PY" -c 'import sys; print(sys.prefix)')/.llama-cpp-build"
if [ "$(cat "$MARK" 2>/dev/null)" != "$KEY" ]; then
  "$PY" -m pip install --quiet --force-reinstall --no-deps "$WHEELS"/llama_cpp_python-*.whl
  "$PY" -m pip install --quiet --find-links "$WHEELS" --only-binary llama-cpp-python "llama-cpp-python==$VERSION"
  echo "$KEY" > "$MARK"
fi
PKG="$("$PY" -c 'import importlib.util, os; print(os.path.dirname(importlib.util.find_spec("llama_cpp").origin))')"
cp "$WHEELS/nistchat-build.json" "$PKG/nistchat-build.json"
echo "    llama.cpp variant: $VARIANT"
