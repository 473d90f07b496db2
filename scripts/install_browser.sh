#!/usr/bin/env bash
# Chromium for the browser tests, from Debian packages (Playwright drives it through
# executable_path; we never run `playwright install`). Idempotent and quiet when present.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install_browser: no /usr/bin/chromium and no apt-get; install Chromium by hand (browser tests will be skipped)" >&2
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "install_browser: need root (or sudo) to apt-get install chromium; browser tests will be skipped" >&2
    exit 0
  fi
fi
echo "==> apt-get install chromium chromium-driver"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium chromium-driver >/dev/null
echo "==> $(/usr/bin/chromium --version 2>/dev/null || echo 'chromium installed')"
