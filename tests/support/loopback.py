"""One-off HTTP requests of the tests to the suite's own services on 127.0.0.1.

``httpx.get(...)`` makes a client for each call, and each client builds a TLS context: where
``SSL_CERT_FILE`` is set (many CI images) that reads the whole certificate bundle, 50 ms of CPU,
for a plain-HTTP request on the loopback that takes one. A test that polls a starting server
through it twenty times a second spent a core on certificates. These calls are ``httpx``'s own,
with the process's one TLS context (:mod:`humaine_platform.tls`, which the suite's own
clients use). Like ``httpx.get``, :func:`get` and :func:`post` open a connection per call and
keep no cookies, so a server restarted between two calls, or another test's server on the same
host, is never answered from a stale connection or a cookie.
"""

from __future__ import annotations

from typing import Any

import httpx

from humaine_platform.tls import client_tls


def request(method: str, url: str, **kwargs: Any) -> httpx.Response:
    return httpx.request(method, url, verify=client_tls(), **kwargs)


def client(**kwargs: Any) -> httpx.Client:
    """A client of its own (a test's session of requests, closed with it), on that context."""
    return httpx.Client(verify=client_tls(), **kwargs)


def get(url: str, **kwargs: Any) -> httpx.Response:
    return request("GET", url, **kwargs)


def post(url: str, **kwargs: Any) -> httpx.Response:
    return request("POST", url, **kwargs)
