#!/usr/bin/env bash
# Build llama.cpp's `llama-server` from the llama.cpp sources the pinned llama-cpp-python sdist
# carries, for the same named CPU variant and with the same explicit flags as the wheel
# (scripts/build_llama.sh; never -march=native), cached by version + flags like the wheel.
#
# Why this server: it is what an office puts on its GPU box (`--parallel N` slots that batch), so
# the tests and `scripts/bench_reader_server.py` run the reader against it, not only against
# `python -m llama_cpp.server` (one generation at a time). Same sources as the wheel: the two
# servers differ in serving, not in the llama.cpp underneath.
#
# Only the server target is compiled (a few minutes on 2 cores, under nice), statically linked so
# the cached file runs on its own; the web UI is left out (nothing is downloaded at build time).
# The binary and its variant record (nistchat-build.json) land in
#   ${XDG_CACHE_HOME:-~/.cache}/nistchat/llama-server/llama-server-VERSION-KEY/
# and the script prints the binary's path as its last line. A second run reuses it.
#
# Usage: scripts/build_llama_server.sh PYTHON      (the venv's python: it runs the variant chooser
#        and `pip download`s the sdist, from pip's cache when it is there)
set -euo pipefail
PY=${1:-.venv/bin/python}
VERSION=0.3.36  # the llama-cpp-python pin (pyproject.toml, scripts/build_llama.sh)
CHOOSER="$(cd "$(dirname "$0")/.." && pwd)/nistchat/engine/backends/cpu_variant.py"
eval "$("$PY" -I "$CHOOSER" shell)"   # sets VARIANT and FLAGS
FLAGS=$(echo "$FLAGS" | tr -s ' ')
KEY=$(printf '%s %s %s' "$VERSION" "$(uname -m)" "$FLAGS" | sha256sum | cut -c1-12)  # the wheel's key
DEST="${XDG_CACHE_HOME:-$HOME/.cache}/nistchat/llama-server/llama-server-$VERSION-$KEY"
if [ ! -x "$DEST/llama-server" ]; then
  echo "    building llama-server from llama-cpp-python $VERSION's llama.cpp, variant $VARIANT ($FLAGS);" \
       "once, several minutes on 2 cores" >&2
  WORK="$DEST.tmp"
  rm -rf "$WORK"; mkdir -p "$WORK"
  "$PY" -m pip download --quiet --no-deps --no-binary :all: -d "$WORK" "llama-cpp-python==$VERSION" >&2
  tar -xzf "$WORK"/llama_cpp_python-"$VERSION".tar.gz -C "$WORK"
  SRC="$WORK/llama_cpp_python-$VERSION/vendor/llama.cpp"
  GEN=(); if command -v ninja >/dev/null; then GEN=(-G Ninja); fi
  # shellcheck disable=SC2086  # FLAGS is a list of -D options
  nice -n 10 cmake -S "$SRC" -B "$WORK/build" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release $FLAGS \
      -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_TESTS=OFF \
      -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF >&2
  nice -n 10 cmake --build "$WORK/build" --target llama-server -j2 >&2
  mkdir -p "$WORK/out"
  cp "$WORK/build/bin/llama-server" "$WORK/out/llama-server"
  "$WORK/out/llama-server" --version >&2
  rm -rf "$DEST"; mv "$WORK/out" "$DEST"; rm -rf "$WORK"
fi
"$PY" -I "$CHOOSER" record "$VARIANT" "$KEY" > "$DEST/nistchat-build.json"
echo "    llama-server variant: $VARIANT" >&2
echo "$DEST/llama-server"
