"""``[standin]``: the two modes, the documented thresholds a round judges by, and the removed
approximation refused in one line."""

from __future__ import annotations

import pytest

from humaine_platform.rules import DOCUMENTED_R0_GAP_MS, DOCUMENTED_R2_WINDOW_MS, RuleSettings
from standins.eo.settings import StandinSettings
from workers.runtime.config import Config, ConfigError


def test_the_removed_mode_is_refused_in_one_line_naming_the_replacements() -> None:
    with pytest.raises(ConfigError) as error:
        Config.load(None, environ={}, overrides=["standin.rules=current_eo"]).section(StandinSettings)
    assert str(error.value) == (
        "invalid configuration: standin.rules: 'current_eo' is gone: use 'real_eo' (the platform EO's own rules, "
        "ported) or 'documented' (R0-R4 as written)"
    )
    assert Config.load(None, environ={}, overrides=["standin.rules=documented"]).section(StandinSettings).rules == "documented"


def test_a_round_judges_by_the_documented_thresholds_with_the_sections_overrides() -> None:
    assert StandinSettings().rule_settings(50.0) == RuleSettings(human_budget=50.0)
    tuned = StandinSettings(r0_min_gap_s=0.0, r2_window_s=0.5).rule_settings(None)
    assert tuned == RuleSettings(r0_min_gap_ms=0.0, r2_window_ms=500.0)
    assert (RuleSettings().r0_min_gap_ms, RuleSettings().r2_window_ms) == (DOCUMENTED_R0_GAP_MS, DOCUMENTED_R2_WINDOW_MS)
