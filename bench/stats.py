"""The benchmarks' percentiles: one function, ``percentile``, instead of a helper per benchmark.

A percentile of a few dozen samples has more than one definition, and the benchmarks had grown
four. Each benchmark keeps the one its recorded figures (``bench/measurements.jsonl``) were
computed with, so a figure stays comparable with the earlier ones, and says which by naming the
``method``, one of ``numpy.percentile``'s:

- :data:`NEAREST` (the default): the sample at rank ``round(q/100 * (n-1))``, a time that was
  actually measured (``avatar``, ``merging``, ``operator_console``, ``stt``, ``transcript``,
  ``turn``, ``voices``);
- :data:`LINEAR`: interpolated between the two samples around that rank, numpy's default
  (``barge_in``, ``camera``, ``lips``, ``voice_to_voice``);
- :data:`HIGHER`: the sample at rank ``ceil(q/100 * (n-1))``; for the 95th percentile that is
  the sample at rank ``floor(0.95 n)``, the one ``real_eo_relay`` and ``standin_loop`` report;
- :data:`WEIBULL`: interpolated at rank ``q/100 * (n+1)``, ``statistics.quantiles``' default
  method, which ``books`` reports (the same figure from 19 samples up: below that
  ``statistics.quantiles`` extrapolates past the largest sample, numpy stops at it).

The median, which has one definition, stays ``statistics.median``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

Method = Literal["nearest", "linear", "higher", "weibull"]
NEAREST: Method = "nearest"
LINEAR: Method = "linear"
HIGHER: Method = "higher"
WEIBULL: Method = "weibull"


def percentile(values: Sequence[float] | np.ndarray, q: float, digits: int | None = None, method: Method = NEAREST) -> float | None:
    """The ``q``-th percentile (0-100) of ``values`` by ``method``, rounded to ``digits`` when
    given; None when there are no values, so a benchmark that saw none prints ``null``. A method
    that picks a sample gives it as it was (an int stays an int)."""
    if len(values) == 0:
        return None
    value: float = np.percentile(values, q, method=method).item()
    return value if digits is None else round(value, digits)
