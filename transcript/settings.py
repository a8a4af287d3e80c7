"""The ``[transcript]`` configuration section."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field, field_validator

from transcript.completeness import DEFAULT_HOLD_WORDS, GIVING_VERBS
from workers.runtime.config import Section
from workers.runtime.messages import PITCH_END, TURN_COMPLETE, TURN_COMPLETE_AT

DEFAULT_GREETINGS = ("hey", "hi", "hello", "ok", "okay", "so", "um", "uh", "well", "excuse", "me", "yo", "and")


class TranscriptSettings(Section):
    """How utterances are fused, merged and delivered. Times in seconds."""

    section_name: ClassVar[str] = "transcript"

    delivery: Literal["eo", "agents"] = "eo"
    """Where each message goes: ``eo`` POSTs it to the EO's ``/relayMessage`` (the current
    platform), ``agents`` to every agent's ``/receiveMessage`` (the original design)."""
    agent_urls: dict[str, str] = Field(default_factory=dict)
    """Agent name -> base URL for ``agents`` delivery; empty: read the ``[eo] app_settings``
    ``serviceMap`` entries named after the avatars."""

    merge_gap_s: float = Field(1.2, ge=0)
    """Two final transcripts closer than this become one message (the EO's R0 would block the
    second). A held final waits until this long after its end, so it is also the added latency
    of a held message; 0 disables merging."""
    merge_hold: Literal["unfinished", "always"] = "unfinished"
    """Which finals wait for a continuation. ``unfinished``: only those that read as cut off
    (they end in one of ``merge_hold_words``, in a number without its unit, in a trailing
    comma or ellipsis, or only name an avatar), or during which speech started again; a final
    that reads as complete is sent as soon as it arrives. ``always``: every final waits the
    gap (the safest for R0, the slowest)."""
    merge_hold_words: list[str] = Field(default_factory=lambda: list(DEFAULT_HOLD_WORDS))
    """Last words that leave a sentence open: conjunctions, prepositions, articles, fillers
    and verbs still waiting for their object (``transcript/completeness.py`` lists them)."""
    merge_hold_bare_numbers: bool = True
    """A final ending in a number without its unit ("I need three") waits for the rest."""
    merge_hold_giving_verbs: list[str] = Field(default_factory=lambda: list(GIVING_VERBS))
    """Verbs that take the buyer and then the thing: a final ending in one of them plus "me"
    or "us" ("can you give me") waits for the thing given."""
    merge_hold_level_pitch_st: float | None = Field(None, ge=-24, le=24)
    """When set (e.g. -4), a final that reads as complete but whose pitch ended less than this
    many semitones below its median waits too (a statement ends low; a buyer stopping
    mid-thought mostly does not; a ``?`` or ``!`` still closes it). Off by default: it joins more
    of the buyer's paused speech into one message, but it also holds many complete turns of a
    real conversation, as people end statements level or rising about as often as low. Measured
    by ``bench/merging.py --corpus spliced`` with ``HUMAINE_ENV_TRANSCRIPT_MERGE_HOLD_LEVEL_PITCH_ST``
    set; see docs/measurements.md."""
    merge_turn: Literal["off", "alone", "or_text", "and_text"] = "off"
    """How the end-of-turn model's verdict on a final (its ``turn_complete``, measured by the
    microphone when this worker's status says it reads it) joins ``merge_hold``'s text rules: ``off``, the
    text rules alone; ``alone``, the model alone (a turn it finds unfinished waits, one it finds
    complete goes at once); ``or_text``, a final waits when either finds it unfinished;
    ``and_text``, only when both do. A final without ``turn_complete`` is judged by its text.
    An unfinished turn waits at most ``merge_gap_s`` for its continuation."""
    merge_turn_threshold: float = Field(TURN_COMPLETE_AT, gt=0, lt=1)
    """A final whose ``turn_complete`` is below this is an unfinished turn (the model's own
    threshold by default)."""
    merge_vad_wait_s: float = Field(0.3, ge=0)
    """A held final also waits this long past the gap: the microphone announces speech that
    began within the gap only once its start is certain (the segmenter's 200 ms start window)
    and the announcement has crossed the broker."""
    merge_final_wait_s: float = Field(1.5, gt=0)
    """Speech that started within the gap keeps the held final open; after that speech's
    voice-activity end, its final may take this long (the recogniser's end-of-utterance work)."""
    merge_speech_wait_s: float = Field(25.0, gt=0)
    """...and the speech itself may last this long (the microphone cuts utterances at
    ``max_utterance_ms``, 20 s) before the held final is sent alone."""
    merge_sources: list[str] = Field(default_factory=lambda: ["mic", "file", "replay"])
    """Sources whose finals may be merged; typed messages are sent as typed."""
    max_final_age_s: float = Field(60.0, gt=0)
    """A final published longer ago than this when it arrives (queued by the broker for a
    worker that was down a long while) is recorded as too old, not relayed: the conversation has
    moved on. Finals queued across a restart of a few seconds are relayed."""
    ttl_s: float = Field(5.0, gt=0)
    """A message not delivered this long after its (latest) final transcript arrived is no
    longer sent and is recorded as undelivered."""

    gaze_start_s: float = Field(0.6, ge=0)
    """The start of the utterance where people look at whom they address..."""
    gaze_start_weight: float = Field(2.0, ge=1)
    """...counts this many times more in the gaze vote."""
    gaze_lead_s: float = Field(0.2, ge=0)
    """The gaze window opens this long before the first word (people look, then speak)."""
    gaze_min_share: float = Field(0.0, ge=0, le=1)
    """The winning avatar needs at least this weighted share of the window."""
    camera_stale_s: float = Field(2.0, gt=0)
    """Once head-pose samples have been seen, gaze is trusted only if one arrived within this
    long of the utterance window (a stopped camera leaves a stale retained attention)."""
    history_s: float = Field(120.0, gt=0)
    """How much attention history is kept."""

    name_aliases: dict[str, list[str]] = Field(default_factory=dict)
    """Extra spellings of an avatar's name as the recogniser writes it, e.g.
    ``{"Celia" = ["cecilia"]}``."""
    greetings: list[str] = Field(default_factory=lambda: list(DEFAULT_GREETINGS))
    """Words that may precede a leading name ("hey Celia", "okay so Watson")."""
    name_max_prefix_words: int = Field(3, ge=0)
    """How many greeting words may stand before a leading name for it to count as addressing."""

    round_id: int | str | None = None
    """Override: relay with this ``roundId`` whatever the round state says (demos, an EO
    driven by hand)."""
    relay_phases: list[str] = Field(default_factory=lambda: ["round"])
    """Round phases in which human utterances are relayed."""
    round_deadline_grace_s: float = Field(2.0, ge=0)
    """A round whose published deadline passed this long ago is treated as over even if no
    end was published."""
    ignore_echo: bool = True
    """Drop transcripts tagged ``echo`` (heard while an avatar spoke)."""

    session_log: bool = True
    """Write every message and its outcome to a session log (JSON lines, ``session_dir``)."""
    session_dir: str = ""
    """Where session logs go; empty: ``<data_dir>/sessions``."""

    connect_timeout_s: float = Field(0.5, gt=0)
    """Connect timeout of one delivery attempt: past it the EO was not reached (retried)."""
    request_timeout_s: float = Field(2.0, gt=0)
    """Read timeout of one delivery attempt: past it the outcome is ``failed`` (never resent)."""
    max_attempts: int = Field(50, ge=1)
    """Connection attempts per message while the EO is unreachable (also bounded by the TTL)."""
    backoff_s: float = Field(0.05, gt=0)
    """First retry delay while the EO is unreachable."""
    backoff_max_s: float = Field(0.5, gt=0)
    """Longest retry delay while the EO is unreachable."""

    def finals_read(self) -> tuple[str, ...]:
        """The finals' measured fields the merger holds by, which the microphone measures only
        when asked (said in this worker's status: :attr:`Status.reads`)."""
        reads = []
        if self.merge_hold_level_pitch_st is not None:
            reads.append(PITCH_END)
        if self.merge_turn != "off":
            reads.append(TURN_COMPLETE)
        return tuple(reads)

    @field_validator("merge_sources")
    @classmethod
    def _known_sources(cls, value: list[str]) -> list[str]:
        allowed = {"mic", "file", "replay", "typed"}
        unknown = sorted(set(value) - allowed)
        if unknown:
            raise ValueError(f"unknown source(s) {unknown}; use some of {sorted(allowed)}")
        return value
