"""The microphone worker on the bus: audio (or typed lines) in, transcripts and VAD out.

It subscribes to every avatar's speaking events (echo gating) and to the microphone control
topic (privacy pause), and publishes interim results (QoS 0), one final per utterance (QoS 1)
and speech-start/end events. A failing device becomes a retained ``error`` status and a retry
every ``retry_s`` seconds; a machine without any capture device falls back to typed input.
"""

from __future__ import annotations

import logging
import sys
import threading
from collections.abc import Callable
from typing import Any, ClassVar, TextIO

from hardware.audio import AudioSource, AudioSourceError, NoInputDeviceError, UnreadableMediaError, is_device, resilient_blocks
from hardware.audio_sources import list_input_devices, open_source
from hardware.clock import Clock, RealClock
from hardware.typed import TypedInput
from workers.microphone import turn as turn_model
from workers.microphone.echo import EchoGate
from workers.microphone.echo_reference import RoomEcho, room_echo
from workers.microphone.engines import load_recognizer
from workers.microphone.enhance import EnhancerUnavailable, enhance_block
from workers.microphone.enhance import load as load_enhancer
from workers.microphone.lips import LipWatch
from workers.microphone.noise_floor import NoiseFloorCheck
from workers.microphone.recognizer import EngineUnavailable, Recognizer
from workers.microphone.settings import MicrophoneSettings
from workers.microphone.transcriber import Transcriber, follow_canceller
from workers.runtime.bus import Bus
from workers.runtime.config import Config
from workers.runtime.logs import NOTICE, RateLimitedLog
from workers.runtime.messages import (
    PITCH_END,
    TURN_COMPLETE,
    HeadPose,
    MicrophoneControl,
    Speaking,
    Status,
    Transcript,
    VadEvent,
    new_id,
)
from workers.runtime.worker import Worker, WorkerUnavailable
from workers.runtime.worker_ids import MICROPHONE as MICROPHONE_WORKER
from workers.runtime.worker_ids import TRANSCRIPT as TRANSCRIPT_WORKER

TYPED_ENGINE = "typed"


def types_for_want_of_a_device(settings: MicrophoneSettings) -> bool:
    """True when the worker will take typed lines because its source is a live device and the
    machine has none (``run`` on a laptop without a microphone). The command then does not load
    the speech engine first: it would only delay the start (a second of CPU for Whisper's model),
    and :meth:`MicrophoneWorker.run` loads it anyway if a device turns out to be there."""
    return settings.typed_fallback and is_device(settings.source) and not list_input_devices()


class _FirstThenAgain:
    """The sources :func:`resilient_blocks` reads in turn: the one opened before the engine
    loaded (if it opened), then a newly opened one each time it asks again."""

    def __init__(self, first: AudioSource | None, open_again: Callable[[], AudioSource]) -> None:
        self._first = first
        self._open_again = open_again

    def next(self) -> AudioSource:
        first, self._first = self._first, None
        return first if first is not None else self._open_again()


class MicrophoneWorker(Worker):
    name: ClassVar[str] = MICROPHONE_WORKER

    def __init__(
        self,
        config: Config,
        worker_id: str | None = None,
        bus: Bus | None = None,
        clock: Clock | None = None,
        recognizer: Recognizer | None = None,
        typed_stream: TextIO | None = None,
    ) -> None:
        super().__init__(config, worker_id, bus)
        self.settings = config.section(MicrophoneSettings)
        self.clock = clock or RealClock()
        self.echo = EchoGate(self.settings.echo_tail_ms)
        self.lips = LipWatch(self.settings.lips_min_motion) if self.settings.lips else None
        self._recognizer = recognizer
        self._typed_stream = typed_stream
        self._paused = threading.Event()
        self.transcriber: Transcriber | None = None
        self.source: AudioSource | None = None
        self.room_echo: RoomEcho | None = None
        """The echo canceller and its reference, when the sound server plays the room (``echo_reference``)."""
        self._notes = RateLimitedLog(self.log)
        self.mode = "typed" if self.settings.typed else "audio"
        self.typed_published = 0
        # a noisy venue: one warning when the room's floor is too high (workers/microphone/noise_floor.py)
        self.noise_check = NoiseFloorCheck(self.settings.noise_check_s, self.settings.noise_warn_dbfs)
        self.bus.subscribe(self.topics.all_speaking(), Speaking, self._on_speaking)
        self.bus.subscribe(self.topics.microphone_control(), MicrophoneControl, self._on_control)
        if self.lips is not None:
            self.bus.subscribe(self.topics.headpose(), HeadPose, self._on_headpose)
        # a broker restarted without persistence forgot the transcript worker's subscription:
        # what was said meanwhile waits until it has subscribed again (bounded, then said)
        self.bus.hold_for_reader([self.topics.transcript_final(), self.topics.vad()], TRANSCRIPT_WORKER)
        # what the transcript worker's merger reads of the finals (pitch, end of turn), from its status
        self.reader_reads: frozenset[str] = frozenset()
        """The measured fields of a final the transcript worker's merger reads (its status says)."""
        self._turn_loading = threading.Lock()
        self.bus.subscribe(self.topics.status(TRANSCRIPT_WORKER), Status, self._on_reader_status)

    @property
    def media_open(self) -> bool:
        """The speech engine is loaded and the audio source is open (recorded media started
        together wait for this: :mod:`sessions.together`)."""
        return self.transcriber is not None

    # -- subscriptions (MQTT network thread) ----------------------------------------------------
    def _on_speaking(self, _topic: str, event: Speaking) -> None:
        self.echo.on_speaking(event)

    def _on_reader_status(self, _topic: str, status: Status) -> None:
        """The transcript worker says which measured fields of a final its merger reads: finals
        carry them from now on. Its status, not a shared configuration file, because it may run
        on another machine; an ``offline`` status keeps what it read (it comes back the same)."""
        if status.state == "offline":
            return
        reads = frozenset(status.reads)
        if reads != self.reader_reads:
            self.reader_reads = reads
            if self.transcriber is not None:
                self._measure_what_is_read(self.transcriber, on_network_thread=True)

    def _measure_what_is_read(self, transcriber: Transcriber, on_network_thread: bool = False) -> None:
        """Measure the pitch and the end of turn when the reader asks (or ``end_of_turn`` is on).
        Asked later, the turn model is loaded on a thread of its own, never on the MQTT network
        thread; asked by the time the audio starts, before the first block."""
        transcriber.measure_pitch(PITCH_END in self.reader_reads)
        if transcriber.turn is None and TURN_COMPLETE in self.reader_reads:
            if on_network_thread:
                threading.Thread(target=self._load_turn, args=(transcriber,), name="turn-model", daemon=True).start()
            else:
                self._load_turn(transcriber)

    def _load_turn(self, transcriber: Transcriber) -> None:
        with self._turn_loading:
            if transcriber.turn is None:
                transcriber.use_turn_model(turn_model.load(self.settings.turn_model_path))

    def _on_headpose(self, _topic: str, pose: HeadPose) -> None:
        assert self.lips is not None
        self.lips.on_headpose(pose)

    def _on_control(self, _topic: str, control: MicrophoneControl) -> None:
        if control.action == "pause":
            self._paused.set()
            if self.transcriber is not None:
                self.transcriber.pause()
            self.log.info("privacy pause: not listening")
        else:
            self._paused.clear()
            if self.transcriber is not None:
                self.transcriber.resume()
            self.log.info("privacy pause lifted: listening")

    @property
    def paused(self) -> bool:
        return self._paused.is_set()

    # -- publishing ----------------------------------------------------------------------------
    def _publish_vad(self, event: VadEvent) -> None:
        self.bus.publish(self.topics.vad(), event)

    def _publish_transcript(self, transcript: Transcript) -> None:
        topic = self.topics.transcript_final() if transcript.final else self.topics.transcript_interim()
        self.bus.publish(topic, transcript)

    # -- main loop -----------------------------------------------------------------------------
    def run(self, stop: threading.Event) -> None:
        first: AudioSource | None = None
        if self.mode == "audio":
            try:
                first = self._open_first(self.settings.source)
            except NoInputDeviceError as exc:
                self._type_instead(exc)
        if self.mode == "typed":
            self._run_typed(stop)
            return
        self._load_recognizer()
        try:  # [microphone] enhance: a noise suppressor in front of the VAD and the recogniser
            enhancer = load_enhancer(self.settings.enhance, self.settings.enhance_blend)
        except EnhancerUnavailable as exc:
            raise WorkerUnavailable(str(exc)) from None
        self.room_echo = room_echo(self.settings, self.clock, self._reference_failed)
        if self.room_echo is not None:
            self.echo.use_tail(self.settings.echo_tail_cancelled_ms)
            if self.transcriber is not None:
                follow_canceller(self.transcriber, self.room_echo.canceller)
        sources = _FirstThenAgain(first, lambda: self._open(self.settings.source))
        blocks = resilient_blocks(sources.next, stop, self._source_failed, self._source_opened, self.settings.retry_s)
        try:
            for block in blocks:
                assert self.transcriber is not None
                self.noise_check.observe(block.samples, block.duration_ms)
                if self.room_echo is not None:
                    block = self.room_echo.canceller.process(block)
                self.transcriber.process(enhance_block(enhancer, block))
            if self.transcriber is not None:
                self.transcriber.flush()
        finally:
            if self.room_echo is not None:
                self.room_echo.close()
        if not stop.is_set() and self.source is not None:
            # A file or replay ended: the worker's job is done (the CLI exits).
            self.log.info("end of %s", self.source.description)

    def _open_first(self, spec: str) -> AudioSource | None:
        """The configured source, opened once before the engine loads. ``None``: it failed in a
        way that may pass (the status says so and :func:`resilient_blocks` retries). Raises
        :class:`NoInputDeviceError` when the machine has no microphone and the buyer may type
        instead (``[microphone] typed_fallback``)."""
        try:
            return self._open(spec)
        except NoInputDeviceError as exc:
            if self.settings.typed_fallback and is_device(spec):
                raise
            self.report_error(str(exc))
        except UnreadableMediaError as exc:
            raise WorkerUnavailable(str(exc)) from None  # a file does not get better by waiting
        except AudioSourceError as exc:
            self.report_error(str(exc))
        return None

    def _type_instead(self, exc: NoInputDeviceError) -> None:
        """No microphone: the buyer types what they say (:attr:`mode` becomes ``typed``)."""
        if not self._has_console():
            # typed input nobody can type would read end-of-file at once and exit 0: a
            # service manager would see a success
            raise WorkerUnavailable(f"{exc}, and no terminal for typed input") from None
        self.log.log(NOTICE, "no microphone: the buyer types what they say (%s)", exc)
        self.mode = "typed"
        self.report_ok("no microphone: typed input")

    def _load_recognizer(self) -> None:
        """Load the engine ``[microphone] engine`` chooses, unless the worker was given one (or
        loaded it on an earlier run)."""
        if self._recognizer is not None:
            return
        try:
            self._recognizer = load_recognizer(self.settings, self.config.core.data_dir, self.config.core.avatars)
        except EngineUnavailable as exc:
            raise WorkerUnavailable(str(exc)) from None  # no model: waiting cannot bring one

    def _source_opened(self, source: AudioSource) -> None:
        assert self._recognizer is not None
        self.source = source
        self.transcriber = self._make_transcriber(self._recognizer, source)
        self._measure_what_is_read(self.transcriber)  # after it is set: a status may come meanwhile
        self.report_ok(f"listening: {source.description} ({self._recognizer.name})")

    def _reference_failed(self, reason: str) -> None:
        """The loudspeaker's reference failed (its reader reopens it): the microphone still
        listens, uncancelled meanwhile; the health's ``echo_reference_error`` says why."""
        self._notes.log(logging.WARNING, "echo reference", "echo reference lost: %s", reason)

    def _source_failed(self, reason: str) -> None:
        # What was said before the device failed was heard: finish that utterance now. It
        # also hands the recogniser back (one utterance at a time) for the reopened device.
        if self.transcriber is not None:
            self.transcriber.flush()
        self.report_error(reason)

    def _open(self, spec: str) -> AudioSource:
        return open_source(spec, clock=self.clock, block_ms=self.settings.block_ms, start_ms=self.clock.now_ms())

    def _make_transcriber(self, recognizer: Recognizer, source: AudioSource) -> Transcriber:
        s = self.settings
        transcriber = Transcriber.from_settings(
            s,
            recognizer,
            source.kind,
            self._publish_vad,
            self._publish_transcript,
            self.config.core.avatars,
            worker_id=self.worker_id,
            echo=self.echo,
            echo_mode=s.echo_mode,
            lips=self.lips,
            emit_barge_in=lambda event: self.bus.publish(self.topics.barge_in(), event),
            cancelling=self.room_echo is not None,
            turn=turn_model.load(s.turn_model_path) if s.end_of_turn else None,
        )
        if self.paused:
            transcriber.pause()
        return transcriber

    def _has_console(self) -> bool:
        """Someone can type: a stream was given, or standard input is a terminal."""
        if self._typed_stream is not None:
            return True
        try:
            return sys.stdin is not None and sys.stdin.isatty()
        except ValueError:  # closed
            return False

    def _run_typed(self, stop: threading.Event) -> None:
        typed = TypedInput(self._typed_stream, self.config.core.avatars)
        first, *others = self.config.core.avatars
        example = f"@{first} ..., {others[0] if others else first}, ..."
        self.log.info("typed input: one line per utterance (%s, or plain text)", example)
        for line in typed.lines(stop):
            if self.paused:
                continue
            now = self.clock.now_ms()
            self.bus.publish(
                self.topics.transcript_final(),
                Transcript(
                    source="typed",
                    final=True,
                    utterance_id=new_id(),
                    text=line.text,
                    confidence=1.0,
                    start=now,
                    end=now,
                    engine=TYPED_ENGINE,
                ),
            )
            self.typed_published += 1
        if not stop.is_set():
            self.log.info("typed input ended")

    def health(self) -> dict[str, Any]:
        figures = super().health()
        figures.update({"mode": self.mode, "paused": self.paused, "typed": self.typed_published})
        figures["noise_floor_dbfs"] = self.noise_check.floor_dbfs
        if self._recognizer is not None:
            figures["engine"] = self._recognizer.name
        if self.source is not None:
            figures.update(self.source.stats())
        if self.room_echo is not None:
            figures.update(self.room_echo.health())
        if self.transcriber is not None:
            st = self.transcriber.stats
            figures.update(
                {
                    "utterances": st.utterances,
                    "finals": st.finals,
                    "interims": st.interims,
                    "echo_dropped": st.echo_dropped,
                    "echo_tagged": st.echo_tagged,
                    "barge_ins": st.barge_ins,
                    "bystanders_dropped": st.bystanders,
                }
            )
        return figures
