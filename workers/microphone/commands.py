"""The microphone worker's commands."""

from workers.runtime.registry import Command
from workers.runtime.worker_ids import MICROPHONE

COMMANDS = (
    Command(MICROPHONE, "workers.microphone.cli", "microphone worker: voice activity and speech-to-text",
            section="microphone", aliases=("mic",)),
    Command("transcribe", "workers.microphone.transcribe_cli", "audio files to transcripts (one JSON line per utterance)",
            section="microphone"),
    Command("models", "workers.microphone.models_cli", "download the speech models (needs a network)"),
)
