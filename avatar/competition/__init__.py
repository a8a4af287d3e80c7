"""The competition around the rounds: the roster, its fair schedule, the agents of each round, the standings."""
