"""A real two-person telephone conversation with its timed transcript, from the pyannote.audio
wheel (MIT): conversational human speech for the merging benchmark and the paused-speech corpus,
and two of the noise set's talkers.

Its own module because both the noise set's recipe (``noise_set``) and the set-up step's list of
fetchers (``fetch_assets``, which builds the noise set) need it: neither imports the other for it.
"""

from __future__ import annotations

import logging
import zipfile
from pathlib import Path

from scripts.wheels import ASSETS, registry_wheel, write_atomically

log = logging.getLogger(__name__)

PYANNOTE_VERSION = "4.0.7"
CONVERSATION = ASSETS / "pyannote" / "sample"
CONVERSATION_WAV = CONVERSATION / "sample.wav"
CONVERSATION_STM = CONVERSATION / "sample.stm"


def conversation_sample() -> Path:
    """30 s of a real telephone conversation between two people, with its timed transcript
    (``sample.wav`` and ``sample.stm`` from the pyannote.audio wheel, MIT): conversational
    human speech for the merging benchmark (how statements end in talk, not in prompts)."""
    if CONVERSATION_WAV.is_file() and CONVERSATION_STM.is_file():
        return CONVERSATION
    wheel = registry_wheel("pyannote.audio", PYANNOTE_VERSION)
    CONVERSATION.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as archive:
        for target in (CONVERSATION_WAV, CONVERSATION_STM):
            write_atomically(target, archive.read(f"pyannote/audio/sample/{target.name}"))
    log.info("conversation sample in %s", CONVERSATION)
    return CONVERSATION
