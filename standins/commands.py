"""The stand-ins' commands: the stand-in EO and the demo sellers."""

from workers.runtime.registry import Command

COMMANDS = (
    Command("orchestrator", "standins.eo_cli", "stand-in Environment Orchestrator for demos and tests", section="standin"),
    Command("demo-agents", "standins.demo_agents_cli", "Celia and Watson as small rule-based sellers", section="demo_agents"),
)
