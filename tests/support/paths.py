"""Where the tests find the checkout, their data and their artifacts, wherever a test module sits."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
"""The checkout (the folder holding ``pyproject.toml``)."""
FIXTURES = ROOT / "tests" / "fixtures"
"""Data the tests read: recorded EO traffic, held-out seller lines."""
ARTIFACTS = ROOT / "test-artifacts"
"""Screenshots and recordings the tests leave for people to look at."""
