"""HUMAINE platform models, the EO HTTP client, and the turn-taking rules as a library."""
