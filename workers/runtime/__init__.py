"""The worker runtime, the ground every worker stands on: the MQTT bus, the message envelope and
topics, configuration, logging, the embedded broker, one-instance checks and the worker lifecycle.
It imports only :mod:`hardware` and libraries, never a worker or the suite above it."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("humaine-env")
except PackageNotFoundError:  # running from a source tree that was not installed
    __version__ = "0.0.0+source"
