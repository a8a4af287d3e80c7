"""The committed configuration reference is the one the settings models generate: a key added,
renamed or re-described without regenerating the page fails here, not in a reader's hands."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from humaine_env import config_cli
from tests.support.paths import ROOT
from workers.runtime.config import Config
from workers.runtime.config_doc import REFERENCE_COMMAND, REFERENCE_FILE, reference_markdown
from workers.runtime.worker import EXIT_CONFIG


def test_the_committed_reference_is_the_generated_one() -> None:
    committed = (ROOT / REFERENCE_FILE).read_text(encoding="utf-8")
    assert committed == reference_markdown(), f"{REFERENCE_FILE} is out of date: run `{REFERENCE_COMMAND}` at the checkout's root"


def test_every_key_has_its_own_heading_and_environment_variable() -> None:
    text = reference_markdown()
    assert "### `broker.url`" in text and "### `eo.url`" in text  # same key, two sections, two anchors
    assert "- Environment: `HUMAINE_ENV_VOSK_MODEL` or `HUMAINE_ENV_MICROPHONE_VOSK_MODEL`" in text
    assert "- Allowed values: `auto`, `external`, `embedded`" in text


def test_config_reference_prints_or_writes_it_like_init(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # no ./humaine-env.toml of the checkout's
    config = Config.load(None, environ={})
    target = tmp_path / "configuration.md"

    def reference(path: Path | None, force: bool = False) -> int:
        return config_cli.main(argparse.Namespace(action="reference", path=path and str(path), force=force), config)

    assert reference(None) == 0
    assert capsys.readouterr().out == reference_markdown()
    assert reference(target) == 0
    assert target.read_text(encoding="utf-8") == reference_markdown()
    assert reference(target) == EXIT_CONFIG  # an existing file needs --force
    assert "--force" in capsys.readouterr().err
    assert reference(target, force=True) == 0
