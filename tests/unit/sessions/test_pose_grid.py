"""The head-pose grid's figures from its views (no rendering, no estimator)."""

from __future__ import annotations

from sessions.pose_grid import GridResult, GridView


def test_errors_count_only_the_views_with_a_face_found() -> None:
    result = GridResult([GridView("a", 10.0, 0.0, 12.0, -1.0), GridView("a", -10.0, 5.0, None, None),
                         GridView("b", 0.0, 0.0, -3.0, 2.0)])
    summary = result.summary()
    assert summary["views"] == 3 and summary["detected"] == 2
    assert summary["yaw_mae"] == 2.5 and summary["yaw_max_err"] == 3.0
    assert summary["pitch_mae"] == 1.5
    assert summary["a_yaw_mae"] == 2.0 and summary["b_pitch_mae"] == 2.0
