"""The suite's own commands: the whole room, device listing and the configuration."""

from workers.runtime.registry import Command

COMMANDS = (
    Command("run", "humaine_env.supervisor", "run the whole suite (every available worker) until Ctrl-C", section="run"),
    Command("devices", "humaine_env.devices_cli", "list microphones, speakers and cameras"),
    Command("config", "humaine_env.config_cli", "the configuration in effect (show), a sample file (init) or its reference"),
)
