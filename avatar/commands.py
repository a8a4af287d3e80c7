"""The Avatar Controller's commands: the service, and the check that the EO calls it."""

from workers.runtime.registry import Command
from workers.runtime.worker_ids import AVATAR

COMMANDS = (
    Command(AVATAR, "avatar.cli", "Avatar Controller: the EO's human-side service (speech, gestures)", section="avatar"),
    Command("check-wiring", "avatar.wiring_cli", "check the room is wired into the EO (reachable, appSettings.json, UUID)",
            section="eo"),
    Command("tournament", "avatar.tournament_cli", "the competition: plan its fair schedule, show it and the standings",
            section="tournament"),
)
