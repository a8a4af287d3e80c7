"""Ending a round early on the platform's EO without taking it down.

What the EO (commit 20a32e2) does with ``/endRound {"roundId"}``, measured on its source: it tells
the round's agents, deletes the round, and leaves the round's timers running (it cancels them by
testing key names, not timers). When the next timer fires, the round's loop looks the round up to
send its next calls, finds nothing, throws, and the EO process exits (``ERR_HTTP_HEADERS_SENT``)
- without sending any totals.

What keeps it alive: right after ``/endRound``, an ``/initializeRound`` with only ``roundId`` and a
``serviceMap`` that names every service the round's loop will still call - the human-side
service(s), the round's agents (by avatar name) and ``utility-generator``. The loop then goes on
against that map: at the round's own end a second ``/endRound`` and, after the post-round, the
round's totals to the human side (``/receiveRoundTotals``, with the deals booked before End and
the allocation saved before it). The agents were told of the end by the first ``/endRound``; the
map points them at :data:`NOWHERE`, so the loop's later calls to them (a ``/startRound`` after a
warm-up that End cut short, the second ``/endRound``) fail at once instead of telling them that a
round the EO has deleted starts: an agent that then spoke would make the EO exit on its relay.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from humaine_platform.endpoints import UTILITY_GENERATOR_SERVICE
from humaine_platform.models import RoundId, ServiceEntry

NOWHERE: Final = ServiceEntry(protocol="http", host="127.0.0.1", port=1)
"""A port nothing listens on (1, tcpmux: reserved, never served): a call there is refused at
once. (Port 0 would not do: the EO leaves a falsy port out of the address and calls port 80.)"""


def keep_alive_body(round_id: RoundId, human_services: Mapping[str, ServiceEntry], agents: Iterable[str],
                    utility_generator: ServiceEntry) -> dict[str, Any]:
    """The ``/initializeRound`` that keeps the EO alive after ``/endRound`` of ``round_id``."""
    service_map = {name: entry.body() for name, entry in human_services.items()}
    service_map.update({name: NOWHERE.body() for name in agents})
    service_map[UTILITY_GENERATOR_SERVICE] = utility_generator.body()
    return {"roundId": round_id, "serviceMap": service_map}
