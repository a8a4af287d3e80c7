"""``humaine-env label SESSION``: write a session's ``truth.json`` in the terminal, so that
``humaine-env eval`` measures real sessions, not only generated ones.

It starts from the session's ``truth.json`` when there is one (labelling again loses
nothing), else from a draft of what the suite heard and saw (:mod:`sessions.label`), and walks
through every utterance, then every gaze span; :data:`PROMPT_HELP` says what to type.
``--accept`` writes the draft without asking (to check it by other means). The file is
written atomically at the end; Ctrl-C or end of input before that writes nothing.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import TYPE_CHECKING, TypeGuard, get_args, overload

from workers.runtime.config import Config

if TYPE_CHECKING:
    from sessions.format import Cue, GazeSpan, Session, Truth, TruthUtterance

EXIT_FAILED = 1
PROMPT_HELP = """At each utterance and gaze span, Enter keeps it; or type:
  t TEXT        the words actually said
  a NAME | a -  the avatar addressed, or looked at (- for nobody)
  c CUE         gaze, name or none: how the buyer addressed it
  s START END   its times, seconds from the session start
  p             play its audio (on a sound card)
  d             delete it
  q             save and stop here (the rest is kept as it is)"""


class Quit(Exception):
    """``q``: save what is labelled and stop asking."""


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = PROMPT_HELP
    parser.add_argument("session", help="a session folder (humaine-env record)")
    parser.add_argument("--accept", action="store_true", help="write the draft as it is, without asking")


def main(args: argparse.Namespace, config: Config) -> int:
    from sessions.format import Session, SessionFormatError, save_truth
    from sessions.label import draft

    try:
        session = Session(args.session)
        truth = session.truth() or draft(session)
    except (SessionFormatError, OSError, ValueError, KeyError, TypeError) as exc:
        print(f"humaine-env label: {exc}", file=sys.stderr)
        return EXIT_FAILED
    if not args.accept:
        try:
            truth = _review(session, truth)
        except EOFError:
            print("\nhumaine-env label: input ended; nothing written", file=sys.stderr)
            return EXIT_FAILED
    path = save_truth(session.path, truth)
    print(f"{len(truth.utterances)} utterances and {len(truth.gaze)} gaze spans written to {path}")
    return 0


def _review(session: Session, truth: Truth) -> Truth:
    avatars = session.info.avatars
    origin = session.info.start_ms
    print(f"{session.path}: {len(truth.utterances)} utterances, {len(truth.gaze)} gaze spans; "
          f"avatars {', '.join(avatars)}.\n{PROMPT_HELP}")
    utterances: list[TruthUtterance] = []
    gaze: list[GazeSpan] = []
    pending_u, pending_g = list(truth.utterances), list(truth.gaze)
    try:
        while pending_u:
            utterance = _ask(session, pending_u[0], f"utterance {len(utterances) + 1}/{len(truth.utterances)}", avatars, origin)
            pending_u.pop(0)
            if utterance is not None:
                utterances.append(utterance)
        while pending_g:
            span = _ask(session, pending_g[0], f"gaze span {len(gaze) + 1}/{len(truth.gaze)}", avatars, origin)
            pending_g.pop(0)
            if span is not None:
                gaze.append(span)
    except Quit:
        pass
    return replace(truth, utterances=[*utterances, *pending_u], gaze=[*gaze, *pending_g])


def _describe(item: TruthUtterance | GazeSpan, origin: int) -> str:
    from sessions.format import TruthUtterance

    times = f"{(item.start_ms - origin) / 1000:.2f}-{(item.end_ms - origin) / 1000:.2f} s"
    if isinstance(item, TruthUtterance):
        return f'{times}  "{item.text}"  -> {item.addressee or "nobody"} (cue {item.cue})'
    return f"{times}  looking at {item.target or 'nobody'} (yaw {item.yaw:+.0f}, pitch {item.pitch:+.0f})"


@overload
def _ask(session: Session, item: TruthUtterance, what: str, avatars: list[str], origin: int) -> TruthUtterance | None: ...
@overload
def _ask(session: Session, item: GazeSpan, what: str, avatars: list[str], origin: int) -> GazeSpan | None: ...
def _ask(session: Session, item: TruthUtterance | GazeSpan, what: str, avatars: list[str],
         origin: int) -> TruthUtterance | GazeSpan | None:
    """The item as corrected at the prompt, or None when deleted."""
    from sessions.format import Cue, TruthUtterance

    while True:
        print(f"[{what}] {_describe(item, origin)}")
        answer = input("> ").strip()
        if not answer:
            return item
        command, _, value = answer.partition(" ")
        value = value.strip()
        if command == "q":
            raise Quit
        if command == "d":
            return None
        if command == "p":
            _play(session, item.start_ms, item.end_ms)
        elif command == "a" and (value in avatars or value == "-"):
            name = "" if value == "-" else value
            item = replace(item, addressee=name) if isinstance(item, TruthUtterance) else replace(item, target=name)
        elif command == "t" and value and isinstance(item, TruthUtterance):
            item = replace(item, text=value)
        elif command == "c" and _is_cue(value) and isinstance(item, TruthUtterance):
            item = replace(item, cue=value)
        elif command == "s" and (times := _times(value)) is not None:
            start, end = times
            item = replace(item, start_ms=origin + round(start * 1000), end_ms=origin + round(end * 1000))
        else:
            print(f"  not understood; avatars are {', '.join(avatars)} (or -), cues {', '.join(get_args(Cue))}")


def _is_cue(value: str) -> TypeGuard[Cue]:
    from sessions.format import Cue

    return value in get_args(Cue)


def _times(value: str) -> tuple[float, float] | None:
    try:
        start, end = (float(v) for v in value.split())
    except ValueError:
        return None
    return (start, end) if 0 <= start < end else None


def _play(session: Session, start_ms: int, end_ms: int) -> None:
    """The audio between two session times, on the default sound card."""
    from hardware.audio_files import load_audio
    from hardware.speaker import SoundCardSink, SpeakerError

    path = session.audio_path
    if path is None:
        print("  this session has no audio")
        return
    rate = session.info.sample_rate
    samples = load_audio(path)
    first = max(0, (start_ms - session.info.start_ms) * rate // 1000)
    last = max(first, (end_ms - session.info.start_ms) * rate // 1000)
    sink = SoundCardSink()
    try:
        sink.begin("label", rate)
        sink.write(samples[first:last].astype("<i2").tobytes())
        sink.end()
    except SpeakerError as exc:  # no sound card here: labelling goes on
        print(f"  cannot play audio here ({exc})")
    finally:
        sink.close()
