#!/usr/bin/env bash
# Install llama-cpp-python built for a portable CPU baseline, never for this machine's exact CPU.
#
# Why: a native build (-march=native) on a VM whose CPU advertises AMX compiled AMX kernels that
# the VM then faulted on (SIGSEGV in ggml_backend_amx_mul_mat). The baseline below is x86-64-v3
# (AVX2 + FMA + F16C + BMI2: every x86 server CPU since 2013-2015); AVX-512, AVX-VNNI and AMX are
# off on purpose. On other architectures only GGML_NATIVE=OFF is set (the compiler's baseline).
#
# pip's wheel cache is keyed by the sdist, not by CMAKE_ARGS, so a wheel built earlier with other
# flags would be reused silently. The wheel is therefore built into a folder named after a hash of
# the flags, and installed from there: changing the flags forces a rebuild, reusing them does not.
#
# Usage: scripts/build_llama.sh PYTHON      (the venv's python)
set -euo pipefail
PY=${1:-.venv/bin/python}
VERSION=0.3.36
case "$(uname -m)" in
  x86_64|amd64)
    FLAGS="-DGGML_NATIVE=OFF -DGGML_CPU_ALL_VARIANTS=OFF -DGGML_BACKEND_DL=OFF \
-DGGML_SSE42=ON -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON \
-DGGML_AVX_VNNI=OFF -DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF \
-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DLLAVA_BUILD=OFF" ;;
  *)
    FLAGS="-DGGML_NATIVE=OFF -DGGML_CPU_ALL_VARIANTS=OFF -DGGML_BACKEND_DL=OFF -DLLAVA_BUILD=OFF" ;;
esac
FLAGS=$(echo "$FLAGS" | tr -s ' ')
KEY=$(printf '%s %s %s' "$VERSION" "$(uname -m)" "$FLAGS" | sha256sum | cut -c1-12)
WHEELS="${XDG_CACHE_HOME:-$HOME/.cache}/nistchat/wheels/llama-cpp-python-$VERSION-$KEY"
if ! ls "$WHEELS"/llama_cpp_python-*.whl >/dev/null 2>&1; then
  echo "    building llama-cpp-python $VERSION (portable: $FLAGS); once, a few minutes on 2 cores"
  mkdir -p "$WHEELS.tmp"
  CMAKE_ARGS="$FLAGS" FORCE_CMAKE=1 "$PY" -m pip wheel --quiet --no-deps --no-cache-dir \
      --no-binary llama-cpp-python -w "$WHEELS.tmp" "llama-cpp-python==$VERSION"
  rm -rf "$WHEELS"; mv "$WHEELS.tmp" "$WHEELS"
fi
# The venv records which build it holds: a venv made before (say, with a native build) is replaced.
MARK="$("$PY" -c 'import sys; print(sys.prefix)')/.llama-cpp-build"
if [ "$(cat "$MARK" 2>/dev/null)" != "$KEY" ]; then
  "$PY" -m pip install --quiet --force-reinstall --no-deps "$WHEELS"/llama_cpp_python-*.whl
  "$PY" -m pip install --quiet --find-links "$WHEELS" --only-binary llama-cpp-python "llama-cpp-python==$VERSION"
  echo "$KEY" > "$MARK"
fi
