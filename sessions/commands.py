"""The recorded sessions' commands."""

from workers.runtime.registry import Command
from workers.runtime.worker_ids import RECORD_ROUNDS, RECORDER

COMMANDS = (
    Command("record", "sessions.record_cli", "record the devices and the bus traffic into a session folder"),
    Command("replay", "sessions.replay_cli", "feed a recorded session through the real workers (deterministic)", section="replay"),
    Command("eval", "sessions.eval_cli", "replay sessions with ground truth; one JSON line of accuracy figures", section="replay"),
    Command(RECORD_ROUNDS, "sessions.rounds_cli", "record every round as a session folder (run starts it)",
            worker=RECORDER, section="sessions", enabled_by="sessions.record_rounds"),
    Command("label", "sessions.label_cli", "write a recorded session's truth.json (utterances, addressees, gaze)"),
)
