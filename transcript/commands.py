"""The Rich Transcript worker's command."""

from workers.runtime.registry import Command

COMMANDS = (
    Command("transcript", "transcript.cli", "Rich Transcript worker: utterance + addressee to the EO", section="transcript"),
)
