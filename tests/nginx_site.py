"""nginx with the configuration of docs/deployment.md, as written there (only the certificate, the
ports and the upstream servers replaced), for the tests and scripts/bench_processes.py: the
configuration the docs give is the one that is run."""
from __future__ import annotations

import re
import shutil
import subprocess
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
HOST = "chat.example.org"


def available() -> bool:
    return bool(shutil.which("nginx") and shutil.which("openssl"))


def doc_config(upstreams: list[str], http_port: int, https_port: int, root: Path) -> str:
    """The docs' nginx block with `upstreams` (host:port each, round robin) behind it."""
    text = (REPO / "docs" / "deployment.md").read_text(encoding="utf-8")
    block = re.findall(r"```nginx\n(.*?)```", text, re.S)[0]
    servers = "\n    ".join(f"server {address};" for address in upstreams)
    for old, new in ((f"/etc/letsencrypt/live/{HOST}/fullchain.pem", str(root / "cert.pem")),
                     (f"/etc/letsencrypt/live/{HOST}/privkey.pem", str(root / "key.pem")),
                     ("server 127.0.0.1:8000;", servers), ("listen 80;", f"listen 127.0.0.1:{http_port};"),
                     ("listen 443 ssl", f"listen 127.0.0.1:{https_port} ssl")):
        assert old in block, old
        block = block.replace(old, new)
    return (f"pid {root}/nginx.pid; error_log {root}/error.log; daemon off; events {{}}\n"
            f"http {{ access_log off; client_body_temp_path {root}/body; proxy_temp_path {root}/proxy;\n{block}}}\n")


def start(upstreams: list[str], http_port: int, https_port: int, root: Path) -> subprocess.Popen:
    """A self-signed certificate for HOST, the docs' configuration, nginx started and answering /status."""
    root = Path(root)
    subprocess.run([shutil.which("openssl"), "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                    "-subj", f"/CN={HOST}", "-keyout", str(root / "key.pem"), "-out", str(root / "cert.pem")],
                   check=True, capture_output=True)
    (root / "nginx.conf").write_text(doc_config(upstreams, http_port, https_port, root), encoding="utf-8")
    proxy = subprocess.Popen([shutil.which("nginx"), "-c", str(root / "nginx.conf"), "-p", str(root)],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 20
    while True:
        try:
            httpx.get(f"https://127.0.0.1:{https_port}/status", headers={"Host": HOST}, verify=False, timeout=10)
            return proxy
        except httpx.TransportError:
            if proxy.poll() is not None or time.monotonic() > deadline:
                proxy.kill()
                log = root / "error.log"
                raise RuntimeError(log.read_text() if log.exists() else proxy.stdout.read().decode())
            time.sleep(0.1)


def stop(proxy: subprocess.Popen) -> None:
    proxy.terminate()
    try:
        proxy.wait(10)
    except subprocess.TimeoutExpired:
        proxy.kill()
        proxy.wait(10)
