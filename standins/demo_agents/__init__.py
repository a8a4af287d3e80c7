"""Celia and Watson as small rule-based sellers that implement the platform's agent API.

They make the room's loop alive on a laptop (with the stand-in EO); they are not meant to
negotiate well. See :class:`standins.demo_agents.runner.DemoAgents`.
"""
