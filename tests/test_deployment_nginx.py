"""The nginx configuration in docs/deployment.md, as written there (only the certificate, the
ports and the upstream address replaced), in front of the app served by waitress: TLS, the
redirect from plain HTTP, allowed_hosts and proxy_count seeing the client through the proxy, and
an answer streamed as Server-Sent Events through the unbuffered location."""
from __future__ import annotations

import re

import httpx
import pytest

from . import nginx_site
from .nginx_site import HOST
from .postgres_server import free_port
from .web_support import ADMIN_PASSWORD, DIRECT_LABEL, HX, build_app, message_id, running, sse_events

CLIENT = "127.0.0.7"  # the browser's address; nginx reaches the app from 127.0.0.1


@pytest.fixture
def site(tmp_path, light_runtime):
    if not nginx_site.available():
        pytest.skip("nginx or openssl not installed (Debian: apt-get install nginx openssl)")
    from waitress.server import create_server

    from nistchat.commands.serve import waitress_options  # what `nistchat serve` runs waitress with

    app = build_app(tmp_path, light_runtime, settings={"allowed_hosts": [HOST], "proxy_count": 1,
                                                       "session_cookie_secure": True})
    with running(create_server(app, host="127.0.0.1", port=0, threads=4,
                               **waitress_options(app.config["SETTINGS"]))) as server:
        http_port, https_port = free_port(), free_port()
        proxy = nginx_site.start([f"127.0.0.1:{server.effective_port}"], http_port, https_port, tmp_path)
        try:
            client = httpx.Client(base_url=f"https://127.0.0.1:{https_port}", headers={"Host": HOST}, timeout=30,
                                  transport=httpx.HTTPTransport(local_address=CLIENT, verify=False))
            yield app, client, http_port, https_port
        finally:
            nginx_site.stop(proxy)


def test_the_documented_nginx_config_serves_the_app_over_tls_and_streams_answers(site):
    app, client, http_port, https_port = site
    plain = httpx.get(f"http://127.0.0.1:{http_port}/", headers={"Host": HOST})
    assert plain.status_code == 301 and plain.headers["location"] == f"https://{HOST}/"

    page = client.get("/")
    assert page.status_code == 200 and "Secure" in page.headers["set-cookie"]
    assert client.get("/", headers={"Host": "evil.example"}).status_code == 400  # allowed_hosts, through nginx

    token = re.search(r'name="csrf_token" value="([^"]+)"', page.text).group(1)
    asked = client.post("/ask", data={"question": DIRECT_LABEL, "topic": "1", "csrf_token": token},
                        headers={**HX, "Referer": f"https://{HOST}:{https_port}/"})  # nginx's port, as forwarded
    assert asked.status_code == 200, asked.text[:300]
    with client.stream("GET", f"/ask/stream/{message_id(asked.text)}") as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        body = "".join(stream.iter_text())
    events = sse_events(body)
    names = [name for name, _data in events]
    assert names[0] == "sources" and "token" in names and names[-2:] == ["final", "done"], names
    assert "NIST AI 800-4" in dict(events)["final"]


def test_behind_nginx_the_app_sees_the_clients_address_and_scheme(site):
    """proxy_count = 1 with the options `nistchat serve` gives waitress: the admin session records
    the browser's address (not nginx's), so rate limits and lockouts are per client."""
    from nistchat.models import AdminSession

    app, client, _http_port, https_port = site
    page = client.get("/admin")
    token = re.search(r'name="csrf_token" value="([^"]+)"', page.text).group(1)
    login = client.post("/admin/login", data={"password": ADMIN_PASSWORD, "csrf_token": token},
                        headers={"Referer": f"https://{HOST}:{https_port}/admin"})
    assert login.status_code == 302 and login.headers["location"].startswith("/admin"), login.text[:300]
    with app.app_context():
        from nistchat.extensions import db
        addresses = [s.address for s in db.session.query(AdminSession).all()]
    assert addresses == [CLIENT]
