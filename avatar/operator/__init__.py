"""The operator console (``/operator`` on the Avatar Controller's service): the live state of
every worker, the broker and the EO, the round, the buyer's head pose against the avatars'
targets, the last utterances with their stage timelines, and alerts - all read from the bus."""

from avatar.operator.routes import CONSOLE_PATH

__all__ = ["CONSOLE_PATH"]
