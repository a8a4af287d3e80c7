"""The one TLS context of a process's HTTP clients.

httpx builds a TLS context for every client it makes, and where ``SSL_CERT_FILE`` is set (CI
images, many servers) that parses the whole certificate bundle: 50 ms of CPU, for clients that
mostly speak plain HTTP on the venue's network. The suite's clients are made per request in
places (the allocation check, a round started from the console, the books' reconciliation), so
they share this context instead: the same certificates (``httpx``'s own choice, from the
environment), read once per process. An ``ssl.SSLContext`` may serve many connections and
threads at once.
"""

from __future__ import annotations

import functools
import ssl

import httpx


@functools.cache
def client_tls() -> ssl.SSLContext:
    """The context ``httpx`` would build for a client (``verify=True``), built once."""
    return httpx.create_ssl_context()
