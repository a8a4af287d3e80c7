"""The shapes of what the platform's services answer us, typed.

Every call of the room to the EO or the utility generator goes through one client
(:class:`~humaine_platform.client.EOClient`, :class:`~humaine_platform.utility_generator.UtilityGeneratorClient`)
and comes back as an :data:`~humaine_platform.client.Outcome`; what a delivered answer says is
read here, liberally (the platform's EO answers its round calls in several shapes, the stand-in in
its own), into one model per kind of answer. A call whose answer cannot be read, or that failed,
raises :class:`PlatformCallError` with one line naming the service, the path and why.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final, TypeVar

from pydantic import Field, ValidationError

from humaine_platform import endpoints as ep
from humaine_platform.models import Number, PlatformModel, RoundId, describe_error

ERROR_STATUS: Final = "error"
"""``status`` of the platform EO's refusal that still answers HTTP 200 (``/endRound`` of a round
it does not know: ``{"status": "error", "message": "unknown roundId: r9"}``)."""


class PlatformCallError(Exception):
    """A call to the EO or the utility generator failed or was refused; the message says which
    service, which path and why, in one line."""


@dataclass(frozen=True)
class EOProbe:
    """Whether the EO answers at all, and whether it is the suite's stand-in (whose ``/health``
    says so; the platform's EO serves no ``/health``, and any HTTP answer proves it is there)."""

    reachable: bool
    standin: bool
    detail: str


class RoundCallAnswer(PlatformModel):
    """The answer to ``/initializeRound``, ``/startRound`` (the stand-in's) or ``/endRound``: the
    platform's EO says ``{"roundId", "msg": "Done"}``, ``{"body": "Acknowledged"}`` or, refusing
    with HTTP 200, ``{"status": "error", "message": ...}``; the stand-in ``{"status":
    "Acknowledged", "roundId", ...}`` or a 4xx with ``error``."""

    status: str | None = None
    roundId: RoundId | None = None
    msg: str | None = None
    message: str | None = None
    error: str | None = None
    phase: str | None = None
    """The stand-in's: the phase its ``/endRound`` led to."""

    @property
    def refusal(self) -> str | None:
        """Why the EO refused (None: it did not)."""
        if (self.status or "").lower() != ERROR_STATUS:
            return None
        return self.message or self.error or "refused without a reason"


class StartRoundAnswer(PlatformModel):
    """``/startRound``: the platform's EO answers the list of every participant's answer to its
    ``/setUtility`` (once it has sent them all); the stand-in answers a :class:`RoundCallAnswer`."""

    told: list[Any] = Field(default_factory=list)
    """The participants' answers to ``/setUtility``, in the EO's order (``null``: it failed)."""
    answer: RoundCallAnswer | None = None


class UtilityFunction(PlatformModel):
    """A participant's utility function as the utility generator draws it and the EO forwards it
    in ``/setUtility`` (where it adds ``name`` and ``roundId``)."""

    currencyUnit: str = "USD"
    utility: dict[str, Any]


class AllocationCheck(PlatformModel):
    """``POST /checkAllocation``: whether the ingredients suffice, with the generator's per-good
    ``rationale`` (``{good: {"need", "have"}}``)."""

    sufficient: bool = False
    rationale: dict[str, Any] = Field(default_factory=dict)


class UtilityValue(PlatformModel):
    """``POST /calculateUtility/<role>``: the value of a bundle."""

    currencyUnit: str | None = None
    value: Number | None = None
    breakdown: dict[str, Any] | None = None


class AllocationAnswer(PlatformModel):
    """``/receiveHumanAllocation``: ``Acknowledged``, or ``Failed`` with a ``Reason``."""

    status: str = ""
    Reason: str | None = None
    roundId: RoundId | None = None

    @property
    def taken(self) -> bool:
        return self.status.lower() == ep.ACK_STATUS.lower()


M = TypeVar("M", bound=PlatformModel)


def read_answer(model: type[M], answer: Any, where: str) -> M:
    """``answer`` as ``model``, or :class:`PlatformCallError` naming ``where``."""
    try:
        return model.model_validate(answer if answer is not None else {})
    except ValidationError as exc:
        raise PlatformCallError(f"{where}: an answer that cannot be read ({describe_error(exc)}): {str(answer)[:200]}") from None


def read_start_answer(answer: Any, where: str) -> StartRoundAnswer:
    """The platform EO's list, or the stand-in's object."""
    if isinstance(answer, list):
        return StartRoundAnswer(told=answer)
    return StartRoundAnswer(answer=read_answer(RoundCallAnswer, answer, where))
