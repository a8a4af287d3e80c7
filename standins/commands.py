"""The stand-ins' commands: the stand-in EO and the demo sellers."""

from workers.runtime.registry import Command
from workers.runtime.worker_ids import DEMO_AGENTS, STANDIN_EO

COMMANDS = (
    Command(STANDIN_EO, "standins.eo_cli", "stand-in Environment Orchestrator for demos and tests", section="standin"),
    Command(DEMO_AGENTS, "standins.demo_agents_cli", "Celia and Watson as small rule-based sellers", section="demo_agents"),
)
