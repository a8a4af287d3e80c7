"""Every HTTP path and service name of the HUMAINE platform, spelled once.

The EO, the agents and the human-side service (our Avatar Controller) all speak these paths;
the client, the Avatar Controller's routes, the stand-in EO and the tests import them from
here so a path is never typed twice.
"""

from __future__ import annotations

from typing import Final

# -- Environment Orchestrator (we call these) ----------------------------------------------------
RELAY_MESSAGE: Final = "/relayMessage"
"""Every proposed utterance (human or agent) goes here; the EO applies R0-R4 and forwards it."""
INITIALIZE_ROUND: Final = "/initializeRound"
"""Creates a round (agents, human, durations). The EO then expects ``/startRound``."""
VIEW_QUEUE: Final = "/viewQueue"
"""The EO's message queue of a round (debugging)."""
VIEW_TOTALS: Final = "/viewTotals"
"""The EO's running totals of a round (debugging)."""
RECEIVE_HUMAN_ALLOCATION: Final = "/receiveHumanAllocation"
"""The human's allocation of what was bought to cakes and pancakes (post-round)."""

# -- the suite's own services (the Avatar Controller, the stand-in EO, the demo sellers) ---------
HEALTH: Final = "/health"
"""``GET``: ``{"status": "ok", ...}`` from each of our HTTP services (open without a token)."""

# -- the stand-in EO's own ----------------------------------------------------------------------
STANDIN_MARK: Final = "standin"
"""The key of the stand-in's ``/health`` answer that says it is the stand-in: its ``/endRound``
ends the current phase (the room's End round), where the platform EO's ends the round."""

# -- the utility generator (the buyer's assistant calls these) ---------------------------------
CHECK_ALLOCATION: Final = "/checkAllocation"
"""``POST {"ingredients", "allocation": {"products"}}``: are the ingredients enough, with a
``rationale`` of what each good needs and has."""
CALCULATE_UTILITY: Final = "/calculateUtility"
"""``POST CALCULATE_UTILITY/<role>`` (``buyer``): the value of a bundle under a utility."""
GENERATE_UTILITY: Final = "/generateUtility"
"""``GET GENERATE_UTILITY/<role>``: a utility function drawn from the role's distribution."""
BUYER_ROLE: Final = "buyer"
SELLER_ROLE: Final = "seller"
"""The seller agents' role at the utility generator (``GENERATE_UTILITY/<role>``); the human's is ``BUYER_ROLE``."""

# -- agents and the human-side service (the EO calls these) --------------------------------------
RECEIVE_MESSAGE: Final = "/receiveMessage"
"""A permitted message, forwarded by the EO (or sent directly in the original design)."""
RECEIVE_REJECTION: Final = "/receiveRejection"
"""The sender's message was blocked, with the EO's ``rationale``."""
SET_UTILITY: Final = "/setUtility"
START_ROUND: Final = "/startRound"
"""Also the EO's own path: ``POST /startRound {"roundId"}`` starts an initialized round."""
END_ROUND: Final = "/endRound"

# -- the human-side service only ----------------------------------------------------------------
SEND_ROUND_METADATA: Final = "/sendRoundMetadata"
RECEIVE_LOG: Final = "/receiveLog"
"""Every proposed message with ``permitted`` and ``rationale``."""
RECEIVE_ROUND_TOTALS: Final = "/receiveRoundTotals"
CONFIRM_ACCEPT: Final = "/confirmAccept"
"""Must be answered with exactly :data:`CONFIRM_ACCEPT_ANSWER` or the EO rejects the deal."""

AGENT_PATHS: Final = (SET_UTILITY, START_ROUND, END_ROUND, RECEIVE_MESSAGE, RECEIVE_REJECTION)
"""What every seller agent implements."""
HUMAN_SIDE_PATHS: Final = (*AGENT_PATHS, SEND_ROUND_METADATA, RECEIVE_LOG, RECEIVE_ROUND_TOTALS, CONFIRM_ACCEPT)
"""What the human-side service (the Avatar Controller's role) must answer."""

# -- answers ----------------------------------------------------------------------------------
ACK_STATUS: Final = "Acknowledged"
"""The usual acknowledgement status (``{"status": "Acknowledged"}``)."""
CONFIRM_ACCEPT_STATUS: Final = "acknowledged"
"""The only ``/confirmAccept`` status the current EO accepts (lowercase)."""

# -- service names in appSettings.json ``serviceMap`` ------------------------------------------
EO_SERVICE: Final = "environment-orchestrator"
UTILITY_GENERATOR_SERVICE: Final = "utility-generator"
"""The EO calls it at the end of a round to rate every participant; the buyer's assistant
calls it to check and rate the buyer's allocation."""
HUMAN_SERVICE_NAMES: Final = ("competition-ui", "chat-ui")
"""The only human-side service names the current EO works with."""

DEFAULT_HUMAN_PORT: Final = 7040
"""Where the platform's EO finds its human-side service by default: the competition UI's port,
which the Avatar Controller takes over."""
DEFAULT_EO_PORT: Final = 14010
FIRST_SAMPLE_AGENT_PORT: Final = 14007
"""The platform's sample sellers listen on 14007, 14008, ... in the order of the avatars they play
(competition-ui's Start names them there): where a room without a roster finds its sellers."""
