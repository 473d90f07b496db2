#!/usr/bin/env python3
"""Obtain htmx and its SSE extension from their npm packages (never hand-copied) into
nistchat/static/vendor/, and check them against the pinned SRI hashes in nistchat/static/htmx-pins.json
(inside the package, so a built wheel carries them).

Why: the page must work offline (the default), so it serves a local copy; when a site opts
into the CDN, the same pinned bytes are loaded with Subresource Integrity. `npm pack` fetches
the exact published tarball; the sha384 we compute here is the one the CDN tag carries.

Usage: python scripts/fetch_htmx.py            # fetch if missing, verify pins
       python scripts/fetch_htmx.py --update-pins   # (maintainers) re-pin after a version bump
"""
from __future__ import annotations

import argparse
import base64
import hashlib
import json
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STATIC = ROOT / "nistchat" / "static"
PINS = STATIC / "htmx-pins.json"
VENDOR = STATIC / "vendor"


def sri(data: bytes) -> str:
    return "sha384-" + base64.b64encode(hashlib.sha384(data).digest()).decode()


def npm_pack(package: str, version: str, workdir: Path) -> Path:
    """Download the published tarball with npm's own client; returns its path."""
    out = subprocess.run(["npm", "pack", f"{package}@{version}", "--silent", "--pack-destination", str(workdir)],
                         cwd=workdir, check=True, capture_output=True, text=True).stdout.strip().splitlines()
    return workdir / out[-1]


def extract(tarball: Path, member: str) -> bytes:
    with tarfile.open(tarball) as tar:
        handle = tar.extractfile(f"package/{member}")
        if handle is None:
            raise SystemExit(f"{tarball.name} has no {member}")
        return handle.read()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--update-pins", action="store_true", help="rewrite integrity values from the fetched files")
    parser.add_argument("--force", action="store_true", help="fetch even when the vendored files verify")
    args = parser.parse_args()
    pins = json.loads(PINS.read_text(encoding="utf-8"))
    VENDOR.mkdir(parents=True, exist_ok=True)

    todo = []
    for name, pin in pins.items():
        target = VENDOR / pin["local"]
        if not args.force and not args.update_pins and target.is_file() and sri(target.read_bytes()) == pin["integrity"]:
            continue
        todo.append(name)
    if not todo:
        print(f"htmx: vendored copies present and verified in {VENDOR.relative_to(ROOT)}/")
        return 0
    if shutil.which("npm") is None:
        print("htmx: npm is not installed; install Node.js/npm or set htmx = \"cdn\" in instance/config.toml",
              file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        for name in todo:
            pin = pins[name]
            print(f"htmx: npm pack {name}@{pin['version']}")
            data = extract(npm_pack(name, pin["version"], Path(tmp)), pin["file"])
            digest = sri(data)
            if args.update_pins:
                pin["integrity"] = digest
            elif digest != pin["integrity"]:
                print(f"htmx: {name}@{pin['version']} {pin['file']} has {digest}, pinned {pin['integrity']}; refusing",
                      file=sys.stderr)
                return 1
            (VENDOR / pin["local"]).write_bytes(data)
            print(f"htmx: wrote {VENDOR.relative_to(ROOT)}/{pin['local']} ({len(data)} bytes, {digest})")
    if args.update_pins:
        PINS.write_text(json.dumps(pins, indent=2) + "\n", encoding="utf-8")
        print(f"htmx: pins updated in {PINS.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
