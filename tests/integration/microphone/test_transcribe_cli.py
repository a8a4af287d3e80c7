"""``humaine-env transcribe FILE...`` as a user runs it: a real process, real audio files in
formats the microphone never delivers, the default engine (Whisper), one JSON line per utterance."""

from __future__ import annotations

import io
import json
import os
import subprocess
import wave
from pathlib import Path

import numpy as np

from hardware.audio_files import load_audio, resample
from scripts import synth_speech
from tests.support.helpers import CLI

KEYS = {"file", "start_ms", "end_ms", "text", "confidence", "engine", "words"}


def stereo_44k(path: Path, samples: np.ndarray) -> None:
    """A 44.1 kHz two-channel WAV (the right channel quieter), as a phone or a DAW writes it."""
    high = resample(samples, 16_000, 44_100).astype(np.int16)
    frames = np.stack([high, (high // 2).astype(np.int16)], axis=1)
    buf = io.BytesIO()
    with wave.open(buf, "wb") as wav:
        wav.setnchannels(2)
        wav.setsampwidth(2)
        wav.setframerate(44_100)
        wav.writeframes(frames.astype("<i2").tobytes())
    path.write_bytes(buf.getvalue())


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*CLI, "transcribe", *args], capture_output=True, text=True, timeout=240, check=False)


def test_two_utterances_from_a_stereo_44k_file(tmp_path: Path) -> None:
    voice = synth_speech.FESTIVAL_VOICES[2]
    said = ("the sugar costs three dollars fifty", "i need two cups of flour and a cup of milk")
    clips = [load_audio(synth_speech.synthesize(text, voice).path) for text in said]
    gap = np.zeros(int(16_000 * 1.5), dtype=np.int16)
    audio = np.concatenate([gap, clips[0], gap, clips[1], gap])
    path = tmp_path / "two.wav"
    stereo_44k(path, audio)
    proc = run(str(path))
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(lines) == 2, proc.stdout
    first, second = lines
    assert set(first) == KEYS and first["engine"] == "whisper" and first["file"] == str(path)
    assert "$3.50" in first["text"], first["text"]
    assert "2 cups of flour" in second["text"].lower(), second["text"]
    for line, clip_start in ((first, len(gap)), (second, 2 * len(gap) + len(clips[0]))):
        start_ms = clip_start * 1000 // 16_000
        assert abs(line["start_ms"] - start_ms) <= 500 and line["end_ms"] > line["start_ms"]
        assert line["text"] == " ".join(w["word"] for w in line["words"])
        assert all(line["start_ms"] <= w["start"] <= w["end"] <= line["end_ms"] + 200 for w in line["words"])
        assert 0.0 < line["confidence"] <= 1.0


def test_missing_empty_and_non_audio_files_are_one_line_each(tmp_path: Path) -> None:
    good = Path("/usr/share/pocketsphinx/test/data/goforward.raw")
    empty = tmp_path / "empty.wav"
    empty.write_bytes(b"")
    text = tmp_path / "notes.wav"
    text.write_text("this is not audio\n")
    header_only = tmp_path / "header.wav"
    with wave.open(str(header_only), "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(16_000)
    proc = run(str(tmp_path / "missing.wav"), str(empty), str(good), str(text), str(header_only), "--engine", "pocketsphinx")
    assert proc.returncode == 1
    errors = [line for line in proc.stderr.splitlines() if line.startswith("humaine-env transcribe:")]
    assert len(errors) == 4, proc.stderr
    assert "Traceback" not in proc.stderr
    for name in ("missing.wav", "empty.wav", "notes.wav", "header.wav"):
        assert sum(name in line for line in errors) == 1, errors
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(lines) == 1 and lines[0]["text"].startswith("go forward 10 ") and lines[0]["engine"] == "pocketsphinx"


def test_numbers_as_words_on_request(tmp_path: Path) -> None:
    proc = run("/usr/share/pocketsphinx/test/data/goforward.raw", "--engine", "pocketsphinx", "--numbers", "words")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.splitlines()[0])["text"].startswith("go forward ten ")


def test_models_whisper_without_a_network_is_one_line(tmp_path: Path) -> None:
    """``humaine-env models --whisper NAME`` where nothing can be downloaded (offline mode
    stands in for a venue without a network, whatever the test machine has)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    for name in ("base.en", "no-such-model"):
        proc = subprocess.run(
            [*CLI, "models", "--whisper", name, "--dest", str(tmp_path)], capture_output=True, text=True, timeout=120, env=env, check=False
        )
        assert proc.returncode == 1
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("humaine-env models:") and name in lines[0], proc.stderr
    assert not any(tmp_path.iterdir())  # nothing half-downloaded left behind


def test_a_folder_is_its_audio_files_and_an_empty_one_is_one_line(tmp_path: Path) -> None:
    """``transcribe DIR``: every audio file of the folder, in name order (a recorded session
    folder: its audio.wav); a folder with none says so, rather than asking for DIR/audio.wav."""
    folder = tmp_path / "takes"
    folder.mkdir()
    good = Path("/usr/share/pocketsphinx/test/data/goforward.raw")
    (folder / "b.raw").write_bytes(good.read_bytes())
    (folder / "a.raw").write_bytes(good.read_bytes())
    (folder / "notes.txt").write_text("not audio\n")
    empty = tmp_path / "nothing"
    empty.mkdir()
    proc = run(str(folder), str(empty), "--engine", "pocketsphinx")
    assert proc.returncode == 1, proc.stderr
    assert [json.loads(line)["file"] for line in proc.stdout.splitlines()] == [str(folder / "a.raw"), str(folder / "b.raw")]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("humaine-env transcribe:")]
    assert errors == [f"humaine-env transcribe: {empty}: no audio files (.wav, .flac, .mp3, .ogg, .opus, .m4a, .aac, .raw) in the folder"]


def test_an_offer_without_its_amount_is_printed_with_its_doubt() -> None:
    """A buyer who says "dollars" without how many: the line says what was heard and that the
    price has no amount, rather than passing it on as a whole offer."""
    said = synth_speech.synthesize("I will pay dollars for the eggs.", synth_speech.FESTIVAL_VOICES[-1])
    proc = run(str(said.path))
    assert proc.returncode == 0, proc.stderr
    [line] = [json.loads(x) for x in proc.stdout.splitlines()]
    assert "dollars" in line["text"].lower(), line["text"]
    price = [d for d in line["doubts"] if d["kind"] == "price"]
    assert price and "no_amount" in price[0]["reasons"], line
