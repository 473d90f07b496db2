"""The app's own defences (nistchat/app.py, nistchat/web.py): security headers on every response,
allowed hosts, ProxyFix behind a configured proxy count."""
from __future__ import annotations

import json
import re

from nistchat.app import startup_warnings
from nistchat.web import STATIC_DIR

from .conftest import make_settings
from .web_support import build_app, login


def test_every_response_carries_the_security_headers(client):
    for path in ("/", "/history", "/api/history", "/no-such-page", "/static/css/app.css"):
        headers = client.get(path).headers
        csp = headers["Content-Security-Policy"]
        assert "default-src 'self'" in csp and "script-src 'self';" in csp, csp
        assert "frame-ancestors 'none'" in csp and "unsafe-eval" not in csp and "https:" not in csp
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert headers["X-Frame-Options"] == "DENY"
        assert headers["Referrer-Policy"] == "same-origin"


def test_cdn_mode_allows_exactly_the_pinned_urls(tmp_path, light_runtime):
    client = build_app(tmp_path, light_runtime, settings={"htmx": "cdn"}).test_client()
    csp = client.get("/").headers["Content-Security-Policy"]
    pins = json.loads((STATIC_DIR / "htmx-pins.json").read_text(encoding="utf-8"))
    script_src = re.search(r"script-src ([^;]+);", csp).group(1).split()
    assert script_src == ["'self'"] + [pin["cdn"] for pin in pins.values()]
    assert csp.count("https://") == len(pins)


def test_pages_need_no_inline_script_or_eval(client):
    """The CSP forbids inline code: no <script> without src, no on* or hx-on attributes."""
    login(client)
    for path in ("/", "/history", "/status", "/admin", "/admin/questions", "/evals"):
        html = client.get(path).get_data(as_text=True)
        assert not re.search(r"<script(?![^>]*\bsrc=)[^>]*>", html), path
        assert not re.search(r"\s(on[a-z]+|hx-on[:-][^=\s]*)=", html), path
        assert '"allowEval":false' in html


def test_only_allowed_hosts_are_answered(tmp_path, light_runtime):
    client = build_app(tmp_path, light_runtime, settings={"allowed_hosts": ["chat.example.org"]}).test_client()
    assert client.get("/", base_url="http://chat.example.org:8000").status_code == 200
    refused = client.get("/", base_url="http://evil.example")
    assert refused.status_code == 400
    assert "allowed_hosts" in refused.get_data(as_text=True)
    assert refused.headers["X-Content-Type-Options"] == "nosniff"


def test_any_host_is_the_default_with_a_warning_at_start(tmp_path, client):
    assert client.get("/", base_url="http://whatever.example").status_code == 200
    assert any("allowed_hosts" in w for w in startup_warnings(make_settings(tmp_path)))
    assert not startup_warnings(make_settings(tmp_path, allowed_hosts=["localhost"], admin_password_hash="x"))


def _limited(client, forwarded_for: str) -> int:
    return client.post("/api/ask", json={"question": ""},
                       headers={"X-Forwarded-For": forwarded_for}).status_code


def test_behind_a_proxy_rate_limits_see_the_forwarded_client(tmp_path, light_runtime):
    settings = {"ask_rate_limit": "1 per minute", "proxy_count": 1}
    client = build_app(tmp_path / "a", light_runtime, settings=settings).test_client()
    assert _limited(client, "10.0.0.1") == 400 and _limited(client, "10.0.0.1") == 429
    assert _limited(client, "10.0.0.2") == 400  # another client behind the same proxy


def test_without_a_proxy_forwarded_headers_are_ignored(tmp_path, light_runtime):
    client = build_app(tmp_path / "b", light_runtime, settings={"ask_rate_limit": "1 per minute"}).test_client()
    assert _limited(client, "10.0.0.1") == 400
    assert _limited(client, "10.0.0.2") == 429  # a forged header does not buy a new budget
