"""A round's totals: what ``/viewTotals`` shows, what ``/receiveRoundTotals`` sends at the end
and the buyer's allocation (``/receiveHumanAllocation``) that joins them.

Deliberately unlike the real EO, which stores any allocation it is sent,
``/receiveHumanAllocation`` refuses one that needs more than the buyer was booked (``{"status":
"Failed", "Reason": "the allocation needs 1 more egg, ... than the buyer bought"}``, the shape of
the EO's own refusal): a laptop's round then never scores cakes the buyer could not bake. The
check is the utility generator's, ported (:func:`humaine_platform.buyer_utility.still_needed`).
An allocation it cannot read is stored as the EO stores it.
"""

from __future__ import annotations

import logging
from typing import Any, Final

from humaine_platform import buyer_utility
from humaine_platform import endpoints as ep
from humaine_platform.eo_rules import Totals
from humaine_platform.models import HUMAN
from standins.eo.memory import RoundMemory
from standins.eo.rounds import Round

log = logging.getLogger(__name__)

ALLOCATION_FAILED: Final = "Failed"
"""``status`` of the platform EO's answer to an allocation it does not take (with a ``Reason``)."""
NO_ALLOCATION_BODY: Final = "No body supplied."
"""The platform EO's ``Reason`` when the buyer has no totals (bought nothing) or sent no body."""


def _shortfall(bought: dict[str, Any], products: Any) -> dict[str, float]:
    """Per good, how much more than ``bought`` the allocation ``products`` needs (the recipes
    and counting of the utility generator's ``checkIngredients``, ported). An allocation it
    cannot read needs nothing here: the platform EO stores whatever it gets."""
    try:
        return buyer_utility.still_needed(bought, buyer_utility.Allocation.from_products(products))
    except (TypeError, ValueError) as exc:
        log.info("an allocation that cannot be checked is stored as sent (%s)", exc)
        return {}


class TotalsKeeper:
    """The totals of the rounds in ``memory``: the platform EO's (``real_eo``, a round with
    :attr:`Round.eo_totals`) or the stand-in's own ledger (``documented``)."""

    def __init__(self, memory: RoundMemory, platform_view: bool) -> None:
        self._memory = memory
        self._platform_view = platform_view
        """``/viewTotals`` answers as the platform EO does (its totals by name, or null)."""

    def view(self, round_id: object) -> Any:
        """``GET /viewTotals``."""
        if self._platform_view:
            rnd = self._memory.known_to_the_eo(round_id)
            return None if rnd.eo_totals is None else rnd.eo_totals.by_name
        rnd = self._memory.get(round_id)
        return {"roundId": rnd.round_id, "phase": rnd.phase, "roundTotals": rnd.ledger.totals(rnd.agents)}

    def at_end(self, rnd: Round) -> dict[str, Any]:
        """``roundTotals`` of ``/receiveRoundTotals``."""
        ledger = rnd.ledger.totals(rnd.agents)
        if rnd.eo_totals is None:
            return ledger
        # the EO asks its utility generator; a seller's utility here is its margin, the buyer's
        # the utility generator's rating of the saved allocation (its buyer rules, ported)
        utilities = {name: entry.get("utility") for name, entry in ledger.items() if name in rnd.agents}
        utilities[HUMAN] = self._human_utility(rnd, rnd.eo_totals)
        return rnd.eo_totals.summary(list(rnd.agents), utilities)

    @staticmethod
    def _human_utility(rnd: Round, totals: Totals) -> dict[str, Any] | None:
        """What the utility generator would answer the EO for the buyer: the value of the saved
        allocation (none saved: of nothing, as the EO's ``products: {}``)."""
        human = totals.by_name.get(HUMAN)
        if human is None:
            return None
        function = rnd.human.utility
        try:
            value = buyer_utility.utility_value(buyer_utility.parse_utility(function), human.get("allocation") or {})
        except ValueError as exc:
            log.warning("round %s: the buyer's allocation cannot be rated (%s)", rnd.round_id, exc)
            return None
        return {"currencyUnit": function.get("currencyUnit", rnd.ledger.currency), "value": value}

    def allocate(self, body: Any) -> dict[str, Any]:
        """``/receiveHumanAllocation``: the buyer's allocation joins its totals; answered
        ``Failed`` (200) when the human bought nothing, as the platform EO does, and - unlike
        it - when the allocation needs more than the buyer was booked, with the shortfall."""
        round_id = body.get("roundId") if isinstance(body, dict) else None
        rnd = self._memory.get(round_id)
        human = rnd.eo_totals.by_name.get(HUMAN) if rnd.eo_totals is not None else None
        if human is None or not isinstance(body, dict):
            return {"roundId": round_id, "status": ALLOCATION_FAILED, "Reason": NO_ALLOCATION_BODY}
        payload = body.get("payload")
        shortfall = _shortfall(human.get("quantity") or {}, payload)
        if shortfall:
            # :g: whole units as "2", ounces as "1.5", float dust (0.30000000000000004) as "0.3"
            reason = "the allocation needs " + ", ".join(f"{amount:g} more {good}" for good, amount in shortfall.items())
            reason += " than the buyer bought"
            log.info("round %s: allocation refused: %s", rnd.round_id, reason)
            return {"roundId": round_id, "status": ALLOCATION_FAILED, "Reason": reason}
        human["allocation"] = payload
        return {"roundId": round_id, "status": ep.ACK_STATUS}
