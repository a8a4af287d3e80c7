"""Name recovery on real decodes: Whisper on synthesized sentences in two voices (the logic
itself is unit-tested in tests/unit/microphone/test_mic_names_quantities.py)."""

from __future__ import annotations

import threading

from transcript.fusion.names import NameMatcher
from transcript.settings import DEFAULT_GREETINGS
from workers.microphone.names import NameRecovery
from workers.microphone.recognizer import WordTiming
from workers.runtime.messages import Transcript

AVATARS = ("Celia", "Watson")
RECOVERY = NameRecovery.build(AVATARS)
MATCHER = NameMatcher.build(AVATARS, {}, DEFAULT_GREETINGS)


def text(ws: list[WordTiming]) -> str:
    return " ".join(w.word for w in ws)


def test_whisper_recovery_adds_no_false_names_and_no_wrong_ones() -> None:
    """Real decodes (two voices): on sentences that start with a sound-alike, recovery finds no
    name; on sentences that name an avatar first, it finds at least as many and never the wrong one."""
    from bench.names import ALIKE, NAMED
    from hardware.audio_files import FileSource
    from scripts.synth_speech import synthesize
    from workers.microphone.engines import load_recognizer
    from workers.microphone.settings import MicrophoneSettings
    from workers.microphone.transcriber import Transcriber
    from workers.runtime.config import Config

    config = Config.load().with_overrides({"microphone.whisper_interims": False, "microphone.name_recovery": False})
    settings = config.section(MicrophoneSettings)
    recognizer = load_recognizer(settings, config.core.data_dir)
    named = [NAMED[i] for i in (0, 5, 7, 8, 15)]
    alike = [(s, "") for s in ALIKE[:4] + ALIKE[6:9] + ALIKE[11:14]]
    plain = recovered = 0
    for voice in ("en-us+m3", "festival:cmu_us_slt_arctic_hts"):
        for said, name in named + alike:
            finals: list[Transcript] = []
            transcriber = Transcriber.from_settings(settings, recognizer, "file", lambda _e: None, finals.append, speculate_ms=None)
            for block in FileSource(synthesize(said, voice).path).blocks(threading.Event()):
                transcriber.process(block)
            transcriber.flush()
            ws = [WordTiming(w.word, w.start, w.end, w.conf) for t in finals for w in t.words]
            before = MATCHER.leading_name(text(ws))
            after = MATCHER.leading_name(text(RECOVERY.recover(ws)[0]))
            if not name:
                assert after == before, (voice, said, text(ws))  # nothing added to a sound-alike sentence
            else:
                assert after in (None, name), (voice, said, text(ws))
                plain += before == name
                recovered += after == name
    assert recovered >= plain


# -- the second pass: a real word that sounds like a name, judged by a names-prompted decode ---------
