"""The counters of one bus, shared by its parts (each adds to its own figures)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class BusStats:
    """What one bus received, published and dropped since it was made (in its owner's health)."""

    received: int = 0
    published: int = 0
    dropped_invalid: int = 0
    dropped_oversized: int = 0
    dropped_duplicate: int = 0
    handler_errors: int = 0
    dropped_unhandled: int = 0
    connects: int = 0
    sessions_lost: int = 0
    unpublishable: int = 0
    """Messages of ours that could not be written as JSON (each kind said in a line)."""
    held_for_reader: int = 0
    """Messages held after a reconnect until their reader was back (:meth:`Bus.hold_for_reader`)."""
    sent_without_reader: int = 0
    """Held messages published when the reader did not come back in time (each time said in a line)."""
