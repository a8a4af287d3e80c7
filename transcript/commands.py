"""The Rich Transcript worker's command."""

from workers.runtime.registry import Command
from workers.runtime.worker_ids import TRANSCRIPT

COMMANDS = (
    Command(TRANSCRIPT, "transcript.cli", "Rich Transcript worker: utterance + addressee to the EO", section="transcript"),
)
