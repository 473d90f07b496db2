"""The nginx configuration in docs/deployment.md, as written there (only the certificate, the
ports and the upstream address replaced), in front of the app served by waitress: TLS, the
redirect from plain HTTP, allowed_hosts and proxy_count seeing the client through the proxy, and
an answer streamed as Server-Sent Events through the unbuffered location."""
from __future__ import annotations

import re
import shutil
import subprocess
import threading
import time

import httpx
import pytest

from .conftest import REPO
from .postgres_server import free_port
from .web_support import DIRECT_LABEL, HX, build_app, message_id, sse_events

HOST = "chat.example.org"


def doc_config(upstream: str, http_port: int, https_port: int, root) -> str:
    text = (REPO / "docs" / "deployment.md").read_text(encoding="utf-8")
    block = re.findall(r"```nginx\n(.*?)```", text, re.S)[0]
    for old, new in ((f"/etc/letsencrypt/live/{HOST}/fullchain.pem", str(root / "cert.pem")),
                     (f"/etc/letsencrypt/live/{HOST}/privkey.pem", str(root / "key.pem")),
                     ("server 127.0.0.1:8000;", f"server {upstream};"), ("listen 80;", f"listen 127.0.0.1:{http_port};"),
                     ("listen 443 ssl", f"listen 127.0.0.1:{https_port} ssl")):
        assert old in block, old
        block = block.replace(old, new)
    return (f"pid {root}/nginx.pid; error_log {root}/error.log; daemon off; events {{}}\n"
            f"http {{ access_log off; client_body_temp_path {root}/body; proxy_temp_path {root}/proxy;\n{block}}}\n")


@pytest.fixture
def site(tmp_path, light_runtime):
    nginx, openssl = shutil.which("nginx"), shutil.which("openssl")
    if not nginx or not openssl:
        pytest.skip("nginx or openssl not installed (Debian: apt-get install nginx openssl)")
    from waitress.server import create_server

    app = build_app(tmp_path, light_runtime, settings={"allowed_hosts": [HOST], "proxy_count": 1,
                                                       "session_cookie_secure": True})
    server = create_server(app, host="127.0.0.1", port=0, threads=4, clear_untrusted_proxy_headers=True)
    threading.Thread(target=server.run, daemon=True).start()
    subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", f"/CN={HOST}",
                    "-keyout", str(tmp_path / "key.pem"), "-out", str(tmp_path / "cert.pem")],
                   check=True, capture_output=True)
    http_port, https_port = free_port(), free_port()
    (tmp_path / "nginx.conf").write_text(doc_config(f"127.0.0.1:{server.effective_port}", http_port, https_port,
                                                    tmp_path), encoding="utf-8")
    proxy = subprocess.Popen([nginx, "-c", str(tmp_path / "nginx.conf"), "-p", str(tmp_path)],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        client = httpx.Client(base_url=f"https://127.0.0.1:{https_port}", verify=False, headers={"Host": HOST},
                              timeout=30)
        deadline = time.monotonic() + 20
        while True:
            try:
                client.get("/status")
                break
            except httpx.TransportError:
                if proxy.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError((tmp_path / "error.log").read_text() if (tmp_path / "error.log").exists()
                                         else proxy.stdout.read().decode())
                time.sleep(0.1)
        yield app, client, http_port
    finally:
        proxy.terminate()
        proxy.wait(10)
        server.close()


def test_the_documented_nginx_config_serves_the_app_over_tls_and_streams_answers(site):
    app, client, http_port = site
    plain = httpx.get(f"http://127.0.0.1:{http_port}/", headers={"Host": HOST})
    assert plain.status_code == 301 and plain.headers["location"] == f"https://{HOST}/"

    page = client.get("/")
    assert page.status_code == 200 and "Secure" in page.headers["set-cookie"]
    assert client.get("/", headers={"Host": "evil.example"}).status_code == 400  # allowed_hosts, through nginx

    token = re.search(r'name="csrf_token" value="([^"]+)"', page.text).group(1)
    asked = client.post("/ask", data={"question": DIRECT_LABEL, "topic": "1", "csrf_token": token},
                        headers={**HX, "Referer": f"https://{HOST}/"})
    assert asked.status_code == 200, asked.text[:300]
    with client.stream("GET", f"/ask/stream/{message_id(asked.text)}") as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        body = "".join(stream.iter_text())
    events = sse_events(body)
    names = [name for name, _data in events]
    assert names[0] == "sources" and "token" in names and names[-2:] == ["final", "done"], names
    assert "NIST AI 800-4" in dict(events)["final"]
