"""Negotiation utterances spoken with a pause in the middle, and complete ones, for measuring
how final transcripts are merged (``bench/merging.py``, ``tests/integration/microphone/test_merge_corpus.py``).

Each paused utterance is its two halves synthesised separately by the same voice (so each half
has its own natural prosody) joined by silence longer than the segmenter's hangover, so the
microphone cuts it into two finals as it would a buyer's pause. Two kinds of pause:
``hesitation`` (where people stop to think: after "of", "and", "I would like", a bare number,
a name) and ``boundary`` (between two clauses that each read as complete). Cached under
``.cache/synth/paused``; run directly to (re)generate: ``python scripts/paused_speech.py``.

Halves synthesised apart end in a sentence's falling pitch, which a buyer who stops to think
does not. :func:`spliced_corpus` pauses *inside* one recording instead, so the first part keeps
the rising or level pitch of a sentence still going: the hesitation sentences spoken whole by
each synthetic voice, and real human speech (the Asterisk prompts, the LibriVox reads of the
pocketsphinx test data, the turns of a telephone conversation) paused after a function word
near the middle. Where to cut comes from
pocketsphinx's forced alignment of the known words to the whole recording (the quietest 10 ms
near that word boundary, so no word is cut in two; Whisper's own word timings are often a word
late); the unpaused recordings are the ``complete`` items.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as `python scripts/paused_speech.py`: import the checkout's packages from its root
    sys.path.insert(0, str(ROOT))

from hardware.audio import SAMPLE_RATE  # noqa: E402
from hardware.audio_files import load_audio, write_wav  # noqa: E402
from scripts.conversation import CONVERSATION_STM, CONVERSATION_WAV, conversation_sample  # noqa: E402
from scripts.synth_speech import FESTIVAL_VOICES, VOICES, synthesize  # noqa: E402

CACHE = ROOT / ".cache" / "synth" / "paused"
SPLICED_CACHE = CACHE / "spliced"

HESITATIONS: tuple[tuple[str, str], ...] = (
    ("celia i would like", "two eggs and a cup of milk"),
    ("watson can you sell me three cups of", "flour"),
    ("i will pay", "five dollars for the chocolate"),
    ("how about two eggs and", "a packet of blueberries"),
    ("hey watson", "how much for the vanilla"),
    ("i need", "four ounces of chocolate"),
    ("celia i want the", "sugar and the milk"),
    ("watson give me two cups of sugar for", "three dollars"),
    ("i would take three", "teaspoons of vanilla"),
    ("can you give me a", "better price for the eggs"),
)
"""Pauses where a speaker stops mid-thought: the first half reads as unfinished."""

BOUNDARIES: tuple[tuple[str, str], ...] = (
    ("i want two eggs", "for three dollars"),
    ("that is too expensive", "can you do four dollars"),
    ("celia i like your offer", "but i only need one cup of milk"),
)
"""Pauses between clauses that each read as complete."""

COMPLETE: tuple[str, ...] = (
    "watson how much for a cup of sugar",
    "i offer five dollars for the chocolate",
    "i accept your offer",
    "no deal i reject that offer",
    "celia can i get a packet of sugar and some milk",
    "i need three eggs and one cup of milk for seven dollars",
)
"""Said without a pause: each should leave the transcript worker with its final."""

PAUSES_MS: tuple[int, ...] = (700, 1000)
"""Longer than the segmenter's hangover (500 ms), shorter than the merge gap (1.2 s)."""
LEAD_MS = 300
TAIL_MS = 1500
"""Silence before and after, so the segmenter starts and ends each utterance on its own."""


@dataclass(frozen=True)
class SpokenItem:
    path: Path
    parts: tuple[str, ...]
    kind: str
    """``hesitation``, ``boundary`` or ``complete``."""
    voice: str
    pause_ms: int = 0

    @property
    def text(self) -> str:
        return " ".join(self.parts)


def _silence(ms: int) -> np.ndarray:
    return np.zeros(SAMPLE_RATE * ms // 1000, dtype=np.int16)


def _trimmed(samples: np.ndarray, floor: int = 300, keep_ms: int = 20) -> np.ndarray:
    """The speech without the silence a synthesiser puts around it, so the pause between two
    halves is the pause asked for (below ``floor``, about -40 dBFS, counts as silence)."""
    loud = np.flatnonzero(np.abs(samples.astype(np.int32)) > floor)
    if loud.size == 0:
        return samples
    keep = SAMPLE_RATE * keep_ms // 1000
    return samples[max(0, loud[0] - keep): loud[-1] + keep]


def speak(parts: tuple[str, ...], voice: str, kind: str, pause_ms: int = 0, out_dir: Path = CACHE) -> SpokenItem:
    """One item as 16 kHz mono WAV (cached by voice, parts and pause)."""
    key = hashlib.sha1(f"trimmed|{voice}|{pause_ms}|{'|'.join(parts)}".encode()).hexdigest()[:16]
    path = out_dir / f"{kind}-{voice.replace('+', '_').replace(':', '_')}-{key}.wav"
    if not path.is_file():
        pieces = [_silence(LEAD_MS)]
        for index, part in enumerate(parts):
            if index:
                pieces.append(_silence(pause_ms))
            pieces.append(_trimmed(load_audio(synthesize(part, voice).path)))
        pieces.append(_silence(TAIL_MS))
        out_dir.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        write_wav(tmp, np.concatenate(pieces))
        tmp.replace(path)
    return SpokenItem(path, parts, kind, voice, pause_ms)


def corpus(voices: tuple[str, ...] | None = None, pauses_ms: tuple[int, ...] = PAUSES_MS) -> list[SpokenItem]:
    chosen = voices or (*VOICES, *FESTIVAL_VOICES)
    items: list[SpokenItem] = []
    for voice in chosen:
        for pause in pauses_ms:
            items += [speak(pair, voice, "hesitation", pause) for pair in HESITATIONS]
            items += [speak(pair, voice, "boundary", pause) for pair in BOUNDARIES]
        items += [speak((text,), voice, "complete") for text in COMPLETE]
    return items


HUMAN_MIN_WORDS = 6
HUMAN_MAX_WORDS = 16
HUMAN_PER_SOURCE = 30
"""Human sentences taken from each source (one speaker each), spread over the source."""
CUT_SEARCH_MS = 40
"""How far from the aligned word boundary the quietest point is looked for."""
FRAME_MS = 10


@dataclass(frozen=True)
class Recording:
    """One whole utterance, and after which of its words a pause goes."""

    name: str
    voice: str
    words: tuple[str, ...]
    cut_after: int | None
    """Index of the first part's last word (``None``: used only whole)."""
    load: Callable[[], np.ndarray]


Aligner = Callable[[np.ndarray, Sequence[str]], list[tuple[str, int, int]]]
"""16 kHz samples and the words said -> the words found, each with its start and end (ms)."""
ALIGNER_NAME = "pocketsphinx-forced"
"""Part of the cache key: cut points found another way are not reused."""


def forced_aligner() -> Aligner:
    """Word boundaries by pocketsphinx's forced alignment (its bundled US English model; 10 ms
    frames). A sentence with a word outside its dictionary gets no alignment."""
    from pocketsphinx import Decoder

    decoder = Decoder(samprate=SAMPLE_RATE, lm=None, loglevel="ERROR")

    def align(samples: np.ndarray, words: Sequence[str]) -> list[tuple[str, int, int]]:
        try:
            decoder.set_align_text(" ".join(words))
        except (RuntimeError, ValueError):
            return []
        decoder.start_utt()
        decoder.process_raw(samples.astype(np.int16).tobytes(), full_utt=True)
        decoder.end_utt()
        return [  # no segments when the words could not be aligned to the end of the audio
            (seg.word.split("(")[0], seg.start_frame * 10, (seg.end_frame + 1) * 10)
            for seg in decoder.seg() or ()
            if not seg.word.startswith("<")
        ]

    return align


def _token(word: str) -> str:
    return "".join(ch for ch in word.lower() if ch.isalnum() or ch == "'")


def cut_sample(samples: np.ndarray, words: Sequence[str], cut_after: int, align: Aligner) -> int | None:
    """Where to pause after ``words[cut_after]``: the quietest 10 ms frame within
    :data:`CUT_SEARCH_MS` of the boundary the aligner found between that word and the next;
    ``None`` when the aligner did not place both words (no boundary to trust)."""
    heard = align(samples, words)
    matcher = difflib.SequenceMatcher(a=[_token(w) for w in words], b=[_token(w) for w, _, _ in heard], autojunk=False)
    where: dict[int, int] = {}
    for block in matcher.get_matching_blocks():
        for offset in range(block.size):
            where[block.a + offset] = block.b + offset
    if cut_after not in where or cut_after + 1 not in where:
        return None
    end_ms, start_ms = heard[where[cut_after]][2], heard[where[cut_after + 1]][1]
    boundary = (min(end_ms, start_ms) + max(end_ms, start_ms)) / 2
    frame = SAMPLE_RATE * FRAME_MS // 1000
    first = max(0, int((boundary - CUT_SEARCH_MS) * SAMPLE_RATE / 1000) // frame)
    last = min(len(samples) // frame - 1, int((boundary + CUT_SEARCH_MS) * SAMPLE_RATE / 1000) // frame)
    if last < first:
        return None
    energy = [float(np.mean(samples[i * frame:(i + 1) * frame].astype(np.float64) ** 2)) for i in range(first, last + 1)]
    return (first + int(np.argmin(energy))) * frame + frame // 2


def splice(recording: Recording, pause_ms: int, align: Aligner, out_dir: Path = SPLICED_CACHE) -> SpokenItem | None:
    """``recording`` with ``pause_ms`` of silence after its ``cut_after`` word (cached, with the
    cut point), or ``None`` when the cut cannot be placed."""
    if recording.cut_after is None:
        return None
    key = hashlib.sha1(
        f"{ALIGNER_NAME}|{recording.voice}|{recording.name}|{' '.join(recording.words)}|{recording.cut_after}".encode()
    ).hexdigest()[:16]
    parts = (" ".join(recording.words[: recording.cut_after + 1]), " ".join(recording.words[recording.cut_after + 1:]))
    stem = f"{recording.voice.replace('+', '_').replace(':', '_')}-{key}"
    path = out_dir / f"hesitation-{stem}-{pause_ms}.wav"
    if path.is_file():
        return SpokenItem(path, parts, "hesitation", recording.voice, pause_ms)
    cut_file = out_dir / f"{stem}.cut.json"
    samples = _trimmed(recording.load())
    if cut_file.is_file():
        cut = json.loads(cut_file.read_text())["cut"]
    else:
        cut = cut_sample(samples, recording.words, recording.cut_after, align)
        out_dir.mkdir(parents=True, exist_ok=True)
        cut_file.write_text(json.dumps({"cut": cut, "words": list(recording.words), "cut_after": recording.cut_after}))
    if cut is None:
        return None
    audio = np.concatenate([_silence(LEAD_MS), samples[:cut], _silence(pause_ms), samples[cut:], _silence(TAIL_MS)])
    tmp = path.with_suffix(".tmp")
    write_wav(tmp, audio)
    tmp.replace(path)
    return SpokenItem(path, parts, "hesitation", recording.voice, pause_ms)


def whole(recording: Recording, out_dir: Path = SPLICED_CACHE) -> SpokenItem:
    """``recording`` unpaused, with the corpus's silence around it: a ``complete`` item."""
    key = hashlib.sha1(f"{recording.voice}|{recording.name}|{' '.join(recording.words)}".encode()).hexdigest()[:16]
    path = out_dir / f"complete-{recording.voice.replace('+', '_').replace(':', '_')}-{key}.wav"
    if not path.is_file():
        out_dir.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        write_wav(tmp, np.concatenate([_silence(LEAD_MS), _trimmed(recording.load()), _silence(TAIL_MS)]))
        tmp.replace(path)
    return SpokenItem(path, (" ".join(recording.words),), "complete", recording.voice)


def synthetic_recordings(voices: tuple[str, ...] | None = None) -> list[Recording]:
    """Each hesitation sentence spoken whole by each voice, to be paused where its halves meet."""
    chosen = voices or (*VOICES, *FESTIVAL_VOICES)
    out: list[Recording] = []
    for voice in chosen:
        for first, rest in HESITATIONS:
            text = f"{first} {rest}"
            out.append(Recording(text, voice, tuple(text.split()), len(first.split()) - 1,
                                 lambda text=text, voice=voice: load_audio(synthesize(text, voice).path)))
    return out


def middle_hold_word(words: Sequence[str]) -> int | None:
    """The function word (conjunction, preposition, article) nearest the middle of ``words``
    that leaves at least three words before the pause and two after it."""
    from transcript.completeness import CONJUNCTIONS, DETERMINERS, PREPOSITIONS

    function_words = {*CONJUNCTIONS, *PREPOSITIONS, *DETERMINERS}
    places = [i for i in range(2, len(words) - 2) if words[i] in function_words]
    return min(places, key=lambda i: abs(i - (len(words) - 1) / 2)) if places else None


def _one_sentence_prompts() -> set[str]:
    """Asterisk prompts that are a single sentence (a pause in a two-sentence prompt would be a
    clause boundary, not a hesitation)."""
    import gzip
    import re

    from workers.microphone.evaluation import ASTERISK_TRANSCRIPTS

    names: set[str] = set()
    with gzip.open(ASTERISK_TRANSCRIPTS, "rt", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            name, sep, text = line.partition(":")
            if sep and not line.startswith(";") and len(re.findall(r"[.?!;,]", text.strip()[:-1])) == 0:
                names.add(name.strip())
    return names


def human_recordings(per_source: int = HUMAN_PER_SOURCE) -> list[Recording]:
    """Single sentences of real human speech that have a function word near their middle:
    the Asterisk prompts (one speaker) and the LibriVox reads (another)."""
    from workers.microphone import evaluation

    single = _one_sentence_prompts()
    sources = {
        "human:asterisk": [s for s in evaluation.asterisk_corpus() if s.name in single],
        "human:librivox": [s for s in evaluation.pocketsphinx_corpus() if s.name.startswith("librivox/")],
    }
    out: list[Recording] = []
    for voice, samples in sources.items():
        eligible: dict[tuple[str, ...], Recording] = {}
        for sample in samples:
            words = tuple(sample.text.split())
            cut_after = middle_hold_word(words) if HUMAN_MIN_WORDS <= len(words) <= HUMAN_MAX_WORDS else None
            if cut_after is not None and words not in eligible:
                eligible[words] = Recording(sample.name, voice, words, cut_after, sample.audio)
        chosen = list(eligible.values())
        step = max(1.0, len(chosen) / per_source)  # spread over the alphabet, not its first letters
        out += [chosen[int(i * step)] for i in range(min(per_source, len(chosen)))]
    return out + conversation_recordings()


def conversation_recordings() -> list[Recording]:
    """Every turn of a real two-person telephone conversation (its timed transcript), whole;
    those with a function word near their middle are paused there too. Statements in talk
    end less low than read prompts do, which is what the pitch rule must survive."""
    import re

    conversation_sample()
    audio: dict[str, np.ndarray] = {}

    def turn(start_s: float, end_s: float) -> Callable[[], np.ndarray]:
        def load() -> np.ndarray:
            if "all" not in audio:
                audio["all"] = load_audio(CONVERSATION_WAV)
            return audio["all"][int(start_s * SAMPLE_RATE): int(end_s * SAMPLE_RATE)]
        return load

    out: list[Recording] = []
    for index, line in enumerate(CONVERSATION_STM.read_text().splitlines()):
        fields = line.split(maxsplit=5)
        if len(fields) < 6:
            continue
        speaker, start, end, text = fields[2], float(fields[3]), float(fields[4]), fields[5]
        words = tuple(re.sub(r"[^a-z' ]+", " ", text.lower()).split())
        cut_after = middle_hold_word(words) if len(words) >= HUMAN_MIN_WORDS else None
        out.append(Recording(f"conversation-{index}", f"human:conversation-{speaker.lower()}", words, cut_after, turn(start, end)))
    return out


def spliced_corpus(
    align: Aligner, voices: tuple[str, ...] | None = None, human: bool = True, pauses_ms: tuple[int, ...] = PAUSES_MS
) -> list[SpokenItem]:
    """Hesitation items paused inside whole recordings (see the module docstring), and each
    human recording unpaused as a ``complete`` item."""
    recordings = synthetic_recordings(voices) + (human_recordings() if human else [])
    items: list[SpokenItem] = []
    for recording in recordings:
        for pause in pauses_ms:
            item = splice(recording, pause, align)
            if item is not None:
                items.append(item)
        if recording.voice.startswith("human:"):
            items.append(whole(recording))
    return items


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--voices", default="", help="comma list of voices (default: the synth corpus's espeak-ng and Festival ones)")
    args = parser.parse_args(argv)
    voices = tuple(v for v in args.voices.split(",") if v) or None
    items = corpus(voices)
    print(f"{len(items)} utterances in {CACHE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
