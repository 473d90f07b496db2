"""Fetch the official NIST PDFs of the corpus (addresses from the corpus SOURCES.md).

Plain urllib with a short timeout: on a machine without internet each file gets one plain
sentence saying so, never a stack trace. The Critical Infrastructure concept note has no stable
direct address, so it is listed as manual.
"""
from __future__ import annotations

import socket
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

OFFICIAL_PDFS: dict[str, str | None] = {
    "NIST.AI.100-1.pdf": "https://nvlpubs.nist.gov/nistpubs/ai/NIST.AI.100-1.pdf",
    "NIST.AI.100-2e2023.pdf": "https://nvlpubs.nist.gov/nistpubs/ai/NIST.AI.100-2e2023.pdf",
    "NIST.AI.100-5.pdf": "https://nvlpubs.nist.gov/nistpubs/ai/NIST.AI.100-5.pdf",
    "NIST.AI.600-1.pdf": "https://nvlpubs.nist.gov/nistpubs/ai/NIST.AI.600-1.pdf",
    "NIST.AI.800-4.pdf": "https://nvlpubs.nist.gov/nistpubs/ai/NIST.AI.800-4.pdf",
    "NIST.SP.800-218A.pdf": "https://nvlpubs.nist.gov/nistpubs/SpecialPublications/NIST.SP.800-218A.pdf",
    "NIST.AI.CI-Profile-Concept-Note.pdf": None,  # published on nist.gov without a stable direct link
}


@dataclass
class DownloadResult:
    name: str
    ok: bool
    message: str


def download_corpus(dest: Path, *, timeout_s: float = 10.0, overwrite: bool = False,
                    sources: dict[str, str | None] | None = None, log=print) -> list[DownloadResult]:
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    results = []
    for name, url in (sources or OFFICIAL_PDFS).items():
        target = dest / name
        if url is None:
            result = DownloadResult(name, False, "no direct address; download it from nist.gov by hand "
                                                 f"and save it as {target}")
        elif target.exists() and not overwrite:
            result = DownloadResult(name, True, f"already present at {target}")
        else:
            result = _fetch(url, target, timeout_s)
        log(f"{'ok  ' if result.ok else 'FAIL'} {name}: {result.message}")
        results.append(result)
    return results


def _fetch(url: str, target: Path, timeout_s: float) -> DownloadResult:
    tmp = target.with_name(target.name + ".part")
    try:
        request = urllib.request.Request(url, headers={"User-Agent": "nistchat/1 (corpus download)"})
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            data = response.read()
        if not data.startswith(b"%PDF"):
            return DownloadResult(target.name, False, f"{url} did not return a PDF")
        tmp.write_bytes(data)
        tmp.replace(target)
        return DownloadResult(target.name, True, f"saved {len(data) // 1024} KiB to {target}")
    except urllib.error.HTTPError as exc:
        return DownloadResult(target.name, False, f"{url} answered HTTP {exc.code}")
    except (urllib.error.URLError, socket.timeout, TimeoutError, ConnectionError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        return DownloadResult(target.name, False, f"cannot reach {url} (no internet? {reason})")
    finally:
        tmp.unlink(missing_ok=True)
