"""How far apart the buyer's lips are: the camera's half of the audio-visual cue that tells the
buyer's own speech from a bystander's (:mod:`workers.microphone.lips` is the other half).

FaceMesh landmarks 13 and 14 are the middle of the upper and of the lower inner lip; their
distance is the mouth's opening. It is divided by the distance of the outer eye corners (33 and
263), which the mouth does not move, so the figure does not change with how far the buyer sits
from the camera. Closed lips give about 0.0-0.02; speech opens and closes them several times a
second, up to about 0.3.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

UPPER_INNER_LIP, LOWER_INNER_LIP = 13, 14
EYE_OUTER_CORNERS = (33, 263)


def mouth_opening(landmarks: NDArray[np.float64]) -> float | None:
    """The inner lips' gap over the outer eye-corner distance (image plane), ``None`` when the
    landmarks cannot say (a degenerate face)."""
    points = np.asarray(landmarks, dtype=np.float64)[:, :2]
    eyes = float(np.linalg.norm(points[EYE_OUTER_CORNERS[0]] - points[EYE_OUTER_CORNERS[1]]))
    if eyes <= 1e-6:
        return None
    return float(np.linalg.norm(points[UPPER_INNER_LIP] - points[LOWER_INNER_LIP])) / eyes
