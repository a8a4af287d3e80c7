"""Benchmark: leading avatar names as the recogniser hears them, and the sound-alikes that are not names.

A name spoken first is the strongest addressee cue (``transcript/fusion/names.py``), and Whisper
tiny.en mishears the avatars' names: "Celia" as "Sadly", "See you", "Shelly", "Sell"; "Watson"
as "What's in", "Watts and", "What". Matching the first words phonetically wins some of them
back, and can also take a sentence that really starts with such a word for a name. This bench
measures both, on the same synthetic voices as the test corpus:

- ``named``: sentences that start with an avatar's name ("Celia, that sounds fair.");
- ``alike``: real sentences that start with a sound-alike of a name ("Sadly, that is too
  expensive.", "See you tomorrow.", "What's in the box?", "Sell me two eggs.") — every name
  found in one of them is a false name.

Each sentence is synthesised by every voice (three espeak-ng, three Festival), run through the
microphone worker's own pipeline (VAD, Whisper with the ``[microphone]`` settings,
normalisation; :class:`workers.microphone.transcriber.Transcriber`) and its final transcript
read by the Rich Transcript worker's :class:`~transcript.fusion.names.NameMatcher`, with the
microphone's recovery of misheard names (:mod:`workers.microphone.names`) off, and on at the
configured and each ``--thresholds`` x ``--max-conf`` setting (applied to the same decodes), and
with the second pass (the same recording decoded with the names as Whisper's prompt, asked only
about an unsure opening that sounds like a name: ``workers/microphone/names.py``). Prints
one JSON line per setting: names heard, wrong names, false names, and the CPU time per final
(``--prompt`` / ``--hotwords`` measure contextual biasing;
hotwords need ``HUMAINE_ENV_MICROPHONE_WHISPER_CONTEXT=full``). ``--show`` prints every
transcript. Decodes are cached under ``.cache/names`` by voice, text and engine settings.

``.venv/bin/python bench/names.py [--thresholds 0.85,0.9] [--prompt "Celia, Watson."]``
"""

from __future__ import annotations

import argparse
import hashlib
import json
import statistics
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as `python bench/names.py`: import the checkout's packages from its root
    sys.path.insert(0, str(ROOT))

from scripts.synth_speech import FESTIVAL_VOICES, VOICES, synthesize  # noqa: E402
from transcript.fusion.names import NameMatcher  # noqa: E402
from transcript.settings import DEFAULT_GREETINGS  # noqa: E402
from workers.microphone.names import NameRecovery, names_prompt  # noqa: E402
from workers.microphone.recognizer import WordTiming  # noqa: E402
from workers.microphone.settings import MicrophoneSettings  # noqa: E402

AVATARS = ("Celia", "Watson")
BODIES = (
    "that sounds fair.",
    "I want two eggs and a cup of flour.",
    "how much for a cup of sugar?",
    "I accept your offer.",
    "can you do four dollars?",
    "what is your best price for the butter?",
    "I offer five dollars for the chocolate.",
    "no deal.",
)
NAMED: tuple[tuple[str, str], ...] = (
    *((f"{name}, {body}", name) for name in AVATARS for body in BODIES),
    ("Hey Celia, I need three eggs.", "Celia"),
    ("Hey Watson, I need three eggs.", "Watson"),
)
"""(sentence, the avatar it names first)."""
ALIKE: tuple[str, ...] = (
    "Sadly, that is too expensive.",
    "Sadly, I only have five dollars.",
    "See you tomorrow.",
    "See you later, thanks for the eggs.",
    "Shelly wants two eggs.",
    "Shelly said the flour was cheap.",
    "Sell me two eggs for one dollar.",
    "Sell me a cup of sugar.",
    "Silly me, I forgot the milk.",
    "Sally likes chocolate.",
    "Celery and flour, please.",
    "What's in the box?",
    "What's in the bag of flour?",
    "Watch out for the eggs.",
    "What about the sugar?",
    "What is your price for the flour?",
    "Wasn't that your offer?",
    "What's on sale today?",
)
"""Real sentences that start with a sound-alike of an avatar's name: no name is in them."""
CACHE = ROOT / ".cache" / "names"


@dataclass(frozen=True)
class Heard:
    words: tuple[WordTiming, ...]
    """The final's words before name recovery (the pipeline ran with it off)."""
    said: str
    voice: str
    named: str
    """The avatar the sentence names first; ``""`` for a sound-alike sentence."""
    decode_ms: float


DECODING_CODE = ("workers/microphone", "formats")
"""Where the code that turns audio into a final's words lives: a change there is a new decode."""


def _code_version() -> str:
    """A digest of :data:`DECODING_CODE`'s sources, so that cached decodes are of this code."""
    digest = hashlib.sha1()
    for folder in DECODING_CODE:
        for path in sorted((ROOT / folder).rglob("*.py")):
            digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def _engine_key(settings: object) -> str:
    """Cached decodes are keyed by the settings that shape them and by the decoding code's version."""
    fields = ("engine", "whisper_model", "whisper_beam_size", "whisper_context", "whisper_context_pad_s", "whisper_prompt",
              "biasing", "vocabulary", "numbers", "hangover_ms", "speculate_ms", "whisper_rescore", "whisper_rescore_weight",
              "vad_noise_margin_db", "vad_release_margin_db", "enhance")
    key = {f: getattr(settings, f, None) for f in fields}
    return json.dumps({**key, "code": _code_version()}, sort_keys=True, default=str)


def decode_all(voices: tuple[str, ...], prompt: str | None, hotwords: str | None,
               items: list[tuple[str, str]] | None = None) -> list[Heard]:
    """Every sentence (``items``: (sentence, avatar named first); default: :data:`NAMED` and
    :data:`ALIKE`) by every voice, through the microphone pipeline without name recovery (cached)."""
    from hardware.audio_files import FileSource
    from workers.microphone.engines import load_recognizer
    from workers.microphone.settings import MicrophoneSettings
    from workers.microphone.transcriber import Transcriber
    from workers.runtime.config import Config
    from workers.runtime.messages import Transcript

    overrides: dict[str, object] = {"microphone.whisper_interims": False, "microphone.name_recovery": False}
    if prompt is not None:
        overrides["microphone.whisper_prompt"] = prompt
    config = Config.load().with_overrides(overrides)
    settings = config.section(MicrophoneSettings)
    key = _engine_key(settings) + f"|hotwords={hotwords}"
    recognizer = None
    if items is None:
        items = [*NAMED, *((s, "") for s in ALIKE)]
    out: list[Heard] = []
    for voice in voices:
        for said, named in items:
            digest = hashlib.sha1(f"{key}|{voice}|{said}".encode()).hexdigest()[:16]
            path = CACHE / f"{digest}.json"
            if path.is_file():
                data = json.loads(path.read_text(encoding="utf-8"))
                words = tuple(WordTiming(w[0], w[1], w[2], w[3]) for w in data["words"])
                out.append(Heard(words, said, voice, named, data["decode_ms"]))
                continue
            if recognizer is None:
                recognizer = load_recognizer(settings, config.core.data_dir)
                if hotwords is not None:
                    recognizer.hotwords = hotwords  # type: ignore[attr-defined]
            finals: list[Transcript] = []
            transcriber = Transcriber.from_settings(settings, recognizer, "file", lambda _e: None, finals.append, speculate_ms=None)
            source = FileSource(synthesize(said, voice).path)
            started = time.process_time()
            for block in source.blocks(threading.Event()):
                transcriber.process(block)
            transcriber.flush()
            cpu_ms = (time.process_time() - started) * 1000
            words = tuple(WordTiming(w.word, w.start, w.end, w.conf) for t in finals if t.final for w in t.words)
            CACHE.mkdir(parents=True, exist_ok=True)
            rows = [[w.word, w.start_ms, w.end_ms, w.conf] for w in words]
            path.write_text(json.dumps({"words": rows, "decode_ms": round(cpu_ms, 1)}), encoding="utf-8")
            out.append(Heard(words, said, voice, named, cpu_ms))
    return out


Second = dict[tuple[str, str], tuple[WordTiming, ...]]
"""(voice, sentence) -> the words of the second decode, with the names as Whisper's prompt."""


def text_of(heard: Heard, recovery: NameRecovery | None, second: Second | None = None) -> str:
    """The final's text as the pipeline would publish it with ``recovery`` (and its second pass
    on the names-prompted decode of the same recording, when ``second`` is given)."""
    if recovery is None:
        return " ".join(w.word for w in heard.words)
    confirm = (lambda: second.get((heard.voice, heard.said), ())) if second is not None else None
    return " ".join(w.word for w in recovery.recover(heard.words, confirm)[0])


def score(heard: list[Heard], matcher: NameMatcher, recovery: NameRecovery | None, second: Second | None = None) -> dict[str, object]:
    """Names heard right, wrong and invented on the transcripts."""
    named = [h for h in heard if h.named]
    alike = [h for h in heard if not h.named]
    found = {id(h): matcher.leading_name(text_of(h, recovery, second)) for h in heard}
    right = sum(1 for h in named if found[id(h)] == h.named)
    wrong = sum(1 for h in named if found[id(h)] not in (None, h.named))
    false = [h for h in alike if found[id(h)] is not None]
    return {
        "names_heard": f"{right}/{len(named)}",
        "names_heard_share": round(right / len(named), 3) if named else None,
        "wrong_names": wrong,
        "false_names": f"{len(false)}/{len(alike)}",
        "false_examples": sorted({f"{h.voice}: {text_of(h, recovery, second)}" for h in false})[:8],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--voices", default="all", help="'all' (three espeak-ng, three Festival) or a comma-separated list")
    parser.add_argument("--thresholds", default="", help="phonetic thresholds to score besides the configured one")
    parser.add_argument("--max-conf", default="", help="first-word probability bounds to score besides the configured one")
    parser.add_argument("--prompt", default=None, help="Whisper initial_prompt for the finals (e.g. 'Celia, Watson.')")
    parser.add_argument("--hotwords", default=None, help="Whisper hotwords (needs the full window to be useful)")
    parser.add_argument("--show", action="store_true", help="print every transcript")
    args = parser.parse_args(argv)
    voices = VOICES + FESTIVAL_VOICES if args.voices == "all" else tuple(v for v in args.voices.split(",") if v)
    heard = decode_all(voices, args.prompt, args.hotwords)
    if args.show:
        for h in heard:
            print(f"# {h.voice:32s} {h.named or '-':7s} {h.said!r:45s} -> {text_of(h, None)!r}", file=sys.stderr)
    settings = MicrophoneSettings()
    decode = sorted(h.decode_ms for h in heard)
    common = {
        "utterances": len(heard),
        "voices": list(voices),
        "prompt": args.prompt,
        "hotwords": args.hotwords,
        "decode_cpu_ms_mean": round(statistics.fmean(decode), 1),
        "decode_cpu_ms_p95": round(decode[min(len(decode) - 1, int(0.95 * len(decode)))], 1),
    }
    matcher = NameMatcher.build(AVATARS, {}, DEFAULT_GREETINGS)
    thresholds = [settings.name_recovery_threshold] + [float(t) for t in args.thresholds.split(",") if t]
    bounds = [settings.name_recovery_max_conf] + [float(c) for c in args.max_conf.split(",") if c]
    print(json.dumps({"recovery": "off", **score(heard, matcher, None), **common}), flush=True)
    second: Second | None = None
    if args.prompt is None and args.hotwords is None:
        second = {(h.voice, h.said): h.words for h in decode_all(voices, names_prompt(AVATARS), None)}
    for t in dict.fromkeys(thresholds):
        for c in dict.fromkeys(bounds):
            recovery = NameRecovery.build(AVATARS, t, c)
            label = f"threshold {t:g}, max_conf {c:g}"
            print(json.dumps({"recovery": label, **score(heard, matcher, recovery), **common}), flush=True)
            if second is not None:
                print(json.dumps({"recovery": f"{label}, second pass", **score(heard, matcher, recovery, second), **common}),
                      flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
