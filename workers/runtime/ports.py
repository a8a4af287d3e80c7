"""Is a port free to listen on: checked before a server starts, so that a taken port is one
line naming who wanted it and the setting that moves it, not a server's own error output."""

from __future__ import annotations

import errno
import socket


def taken_port(ports: list[tuple[str, str, int]]) -> str | None:
    """A line naming the first port someone else already holds, or ``None``. A child that
    cannot bind would exit or, worse, the suite would talk to whatever holds the port."""
    for name, host, port in ports:
        with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((host, port))
            except OSError as exc:
                if exc.errno == errno.EADDRINUSE:
                    return f"port {port} on {host} for {name} is taken (another run, or another service?); stop it or choose another port"
                return f"cannot listen on {host}:{port} for {name}: {exc.strerror}"
    return None


def free_port(host: str = "127.0.0.1") -> int:
    """A port nothing listens on now (the kernel's choice), for a service started next."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])
