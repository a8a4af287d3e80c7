"""The last step of a final before it is published: a misheard leading name recovered, and what
not to trust listed (:class:`~workers.runtime.messages.Doubt`), so nothing is rewritten silently."""

from __future__ import annotations

from dataclasses import replace

from workers.microphone.names import Confirm, NameRecovery
from workers.microphone.prices import doubtful_prices
from workers.microphone.quantities import doubtful_quantities
from workers.microphone.recognizer import Hypothesis
from workers.runtime.messages import Doubt


def review(hyp: Hypothesis, base_ms: int, names: NameRecovery | None, quantity_min_conf: float | None,
           confirm: Confirm | None = None) -> tuple[Hypothesis, list[Doubt]]:
    """``hyp`` (normalised) with a misheard leading name written as the name, and its doubts;
    ``base_ms``: the utterance's start on the audio clock (word times are relative to it);
    ``quantity_min_conf``: a number or unit below this probability is unsure (None: quantities
    are not checked); ``confirm``: a second decode with the names as context, asked only when
    the opening is a real word that sounds like a name (:mod:`workers.microphone.names`). Prices
    are always checked: a garbled or missing amount is never a matter of a threshold
    (:mod:`workers.microphone.prices`)."""
    doubts: list[Doubt] = []
    if names is not None and hyp.words:
        words, found = names.recover(hyp.words, confirm)
        if found is not None:
            hyp = replace(hyp, text=" ".join(w.word for w in words), words=words)
            doubts.append(Doubt(kind="name", text=found.name, heard=found.heard, start=base_ms + found.start_ms,
                                end=base_ms + found.end_ms, conf=round(found.conf, 3),
                                reasons=["sounds_like", "second_pass"] if found.second_pass else ["sounds_like"]))
    if quantity_min_conf is not None:
        doubts += [
            Doubt(kind="quantity", text=d.text, start=base_ms + d.start_ms, end=base_ms + d.end_ms, conf=d.conf,
                  reasons=list(d.reasons), maybe=d.maybe)
            for d in doubtful_quantities(hyp.words, quantity_min_conf)
        ]
    doubts += [
        Doubt(kind="price", text=p.text, heard=p.heard, start=base_ms + p.start_ms, end=base_ms + p.end_ms, conf=p.conf,
              reasons=list(p.reasons))
        for p in doubtful_prices(hyp.words)
    ]
    return hyp, doubts
