"""Stand-ins for the platform's own services, for a laptop and the tests: the stand-in
Environment Orchestrator (:mod:`standins.eo`) and Celia and Watson as small rule-based sellers
(:mod:`standins.demo_agents`). They stand above the workers and may use their public pieces."""
