"""Generate ground-truth sessions: synthesized negotiation speech plus a rendered real face
turning towards the avatars, its jaw moving with its speech, written in the session format with
``truth.json``.

Speech comes from the project's espeak-ng synthesizer (:mod:`sessions.speech`), faces from
:mod:`sessions.face_render`; the labels (what was said, to whom, when, by whom, and the head
pose of every frame) come from the script of the session, never from any recogniser or
estimator. The mouth opens with the level of the buyer's own speech (:func:`mouth_track`); with
``bystander_voice`` somebody behind the buyer remarks in the pauses while the buyer's lips stay
still (truth ``speaker: "bystander"``), which is what ``[microphone] lips`` is measured on.
Outputs are cached under ``.cache/sessions`` keyed by their parameters.
"""

from __future__ import annotations

import fcntl
import logging
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from hardware.audio import SAMPLE_RATE, level_dbfs
from hardware.audio_files import load_audio
from hardware.video import Image
from sessions.face_render import Camera, FaceRenderer, room_background, sensor_noise
from sessions.faces import face_model
from sessions.format import SESSION_FILE, CameraInfo, Session, SessionInfo, SessionWriter, Truth
from sessions.scenario import Line, Timeline, build_timeline, plan_lines, with_bystanders
from sessions.speech import synthesize

log = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache" / "sessions"
AVATARS = ("Celia", "Watson")
TARGETS = {"Celia": (20.0, 0.0), "Watson": (-20.0, 0.0)}
"""Where the avatars are seen from the buyer's seat: 40 degrees apart (yaw, pitch)."""
BASE_START_MS = 1_700_000_000_000
"""Generated sessions start at fixed instants so their timestamps are reproducible."""
NOISE_FLOOR = 25.0
"""Standard deviation (int16 units) of the room noise under the speech."""
DEFAULT_FPS = 15.0
MOUTH_LEVELS = 4
"""The rendered mouth opens in this many steps over closed (each pose is rendered once per step)."""
MOUTH_WINDOW_MS = 40
"""The speech's level that opens the mouth is taken over this much audio around each frame."""
MOUTH_RANGE_DB = 24.0
"""The mouth is closed this far under the clip's loudest syllables, and opens fully at them."""
BYSTANDER_GAIN_DB = -6.0
"""A bystander behind the buyer reaches the microphone this much quieter than the buyer."""


@dataclass(frozen=True)
class SessionSpec:
    name: str
    face: str
    voice: str
    seed: int
    fps: float = DEFAULT_FPS
    lines: int = 12
    """How many of the planned utterances to keep (fewer for quick test sessions)."""
    bystander_voice: str = ""
    """When set, somebody behind the buyer, in this voice, remarks after every second line."""

    @property
    def key(self) -> str:
        base = f"{self.name}-{self.face}-{self.voice.replace('+', '_')}-s{self.seed}-{self.fps:g}fps-{self.lines}-lips"
        return base + (f"-by-{self.bystander_voice.replace('+', '_')}" if self.bystander_voice else "")


CORPUS: tuple[SessionSpec, ...] = (
    SessionSpec("s1", "astronaut", "en-us", 1),
    SessionSpec("s2", "f15", "en-gb-x-rp+f3", 2),
    SessionSpec("s3", "f1", "en-us+m3", 3),
    SessionSpec("s4", "f15", "en-us", 4),
)
"""The full corpus: 48 utterances, three faces, three voices."""


def _synthesize(text: str, voice: str) -> NDArray[np.int16]:
    return load_audio(synthesize(text, voice).path)


def _trim(samples: NDArray[np.int16], threshold: int = 200) -> NDArray[np.int16]:
    """Cut espeak's leading/trailing silence so truth times are the speech's own."""
    loud = np.flatnonzero(np.abs(samples.astype(np.int32)) > threshold)
    return samples[loud[0] : loud[-1] + 1] if len(loud) else samples


def mouth_track(clip: NDArray[np.int16], at_ms: NDArray[np.float64]) -> NDArray[np.float64]:
    """How open the speaker's mouth is (0-1, in :data:`MOUTH_LEVELS` steps) at each time
    ``at_ms`` into ``clip``: the speech's level over :data:`MOUTH_WINDOW_MS` there, against the
    clip's loudest syllables. The jaw follows the syllables' loudness (open vowels loud, closures
    silent), which is what a camera can see of lips moving with the voice."""
    half = SAMPLE_RATE * MOUTH_WINDOW_MS // 2000
    centres = (np.asarray(at_ms) * SAMPLE_RATE / 1000).astype(int)
    level = np.array([level_dbfs(clip[max(0, c - half):c + half]) for c in centres], dtype=np.float64)
    opening = np.clip((level - (level.max() - MOUTH_RANGE_DB)) / MOUTH_RANGE_DB, 0.0, 1.0)
    steps: NDArray[np.float64] = np.round(opening * MOUTH_LEVELS) / MOUTH_LEVELS
    return steps


LOCKS_DIR = ".locks"
"""Beside the generated sessions, hidden: the lock files of the sessions being written."""


def generate(spec: SessionSpec, out_dir: Path | None = None, camera: Camera | None = None) -> Path:
    """Write the session of ``spec`` (cached: an existing complete folder is reused). Processes
    that ask for the same session at once (the test workers) take turns on a lock file: the
    first writes it, the others find it written."""
    folder = (out_dir or CACHE) / spec.key
    folder.with_name(folder.name + ".lock").unlink(missing_ok=True)  # where earlier versions left it
    if (folder / SESSION_FILE).is_file():
        return folder
    locks = folder.parent / LOCKS_DIR  # not beside the sessions: `eval DIR/s1-*` takes session folders only
    locks.mkdir(parents=True, exist_ok=True)
    with open(locks / (folder.name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (folder / SESSION_FILE).is_file():
            return folder
        return _generate(spec, folder, camera or Camera())


def _generate(spec: SessionSpec, folder: Path, camera: Camera) -> Path:
    lines: list[Line] = plan_lines(spec.seed, AVATARS)[: spec.lines]
    if spec.bystander_voice:
        lines = with_bystanders(lines, spec.seed)
    clips = [_trim(_synthesize(line.spoken, spec.bystander_voice if line.speaker == "bystander" else spec.voice))
             for line in lines]
    durations = [round(len(c) * 1000 / SAMPLE_RATE) for c in clips]
    timeline = build_timeline(lines, durations, TARGETS, spec.seed, spec.voice, spec.bystander_voice)
    start_ms = BASE_START_MS + spec.seed * 10_000_000
    n_frames = int(timeline.duration_ms * spec.fps / 1000)
    audio, mouth = _mix(spec, clips, timeline, n_frames)
    truth = _truth(spec, timeline, start_ms)
    info = SessionInfo(
        environment_uuid=f"corpus-{spec.name}",
        start_ms=start_ms,
        duration_ms=timeline.duration_ms,
        avatars=list(AVATARS),
        targets={name: {"yaw": yaw, "pitch": pitch} for name, (yaw, pitch) in TARGETS.items()},
        camera=CameraInfo(camera.width, camera.height, spec.fps, camera.hfov_deg, camera.matrix, False),
        source="generated",
        notes={"face": spec.face, "voice": spec.voice, "seed": spec.seed, "generator": "sessions.generate"},
    )
    renderer = FaceRenderer(face_model(spec.face), camera, room_background(camera, seed=spec.seed))
    tmp = folder.with_name(folder.name + ".partial")
    if tmp.exists():
        shutil.rmtree(tmp)  # what a process killed mid-way left
    with SessionWriter(tmp, info) as writer:
        writer.write_audio(audio)
        _write_frames(writer, renderer, spec, timeline, mouth, start_ms, truth)
        writer.write_truth(truth)
    tmp.replace(folder) if not folder.exists() else None
    log.info("generated %s: %d utterances, %.1f s", folder, len(truth.utterances), timeline.duration_ms / 1000)
    return folder


def _mix(spec: SessionSpec, clips: list[NDArray[np.int16]], timeline: Timeline,
         n_frames: int) -> tuple[NDArray[np.int16], NDArray[np.float64]]:
    """The session's audio (room noise, the buyer's lines, a bystander's quieter ones) and how
    open the buyer's mouth is at each of its ``n_frames`` frames (times from the session start)."""
    rng = np.random.default_rng(spec.seed)
    audio = rng.normal(0.0, NOISE_FLOOR, timeline.duration_ms * SAMPLE_RATE // 1000)
    mouth = np.zeros(n_frames)
    for clip, utt in zip(clips, timeline.utterances, strict=True):
        at = utt.start_ms * SAMPLE_RATE // 1000
        if utt.speaker == "bystander":
            audio[at : at + len(clip)] += clip * 10.0 ** (BYSTANDER_GAIN_DB / 20.0)
            continue
        audio[at : at + len(clip)] += clip
        frames = np.arange(int(np.ceil(utt.start_ms * spec.fps / 1000)), min(n_frames, int(utt.end_ms * spec.fps / 1000)))
        if frames.size:
            mouth[frames] = mouth_track(clip, frames * 1000.0 / spec.fps - utt.start_ms)
    return np.clip(np.round(audio), -32768, 32767).astype(np.int16), mouth


def _truth(spec: SessionSpec, timeline: Timeline, start_ms: int) -> Truth:
    """The labels of the script, moved to the session's clock (the timeline's utterances with
    them); the poses of the frames are added as they are rendered."""
    truth = Truth(face=spec.face)
    for utt in timeline.utterances:
        utt.start_ms += start_ms
        utt.end_ms += start_ms
    for span in timeline.gaze:
        truth.gaze.append(type(span)(span.start_ms + start_ms, span.end_ms + start_ms, span.target, span.yaw, span.pitch, span.motion))
    truth.utterances = timeline.utterances
    return truth


def _write_frames(writer: SessionWriter, renderer: FaceRenderer, spec: SessionSpec, timeline: Timeline, mouth: NDArray[np.float64],
                  start_ms: int, truth: Truth) -> None:
    """Render every frame (each pose and mouth once), with its own sensor noise, and its pose into ``truth``."""
    cache: dict[tuple[float, float, float], Image] = {}
    for i in range(len(mouth)):
        offset = round(i * 1000.0 / spec.fps)
        yaw, pitch = timeline.pose_at(offset)
        key = (round(yaw, 2), round(pitch, 2), float(mouth[i]))
        if key not in cache:
            cache[key] = renderer.render(key[0], key[1], 0.0, key[2])
        writer.add_frame(sensor_noise(cache[key], seed=spec.seed * 100_000 + i), start_ms + offset)
        truth.poses.append((start_ms + offset, key[0], key[1]))


def corpus(specs: tuple[SessionSpec, ...] = CORPUS, out_dir: Path | None = None) -> list[Session]:
    return [Session(generate(spec, out_dir)) for spec in specs]
