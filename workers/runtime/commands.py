"""The runtime's own command: the embedded MQTT broker."""

from workers.runtime.registry import Command

COMMANDS = (
    Command("broker", "workers.runtime.broker_cli", "serve the embedded MQTT broker", section="broker"),
)
