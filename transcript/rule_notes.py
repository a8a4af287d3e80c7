"""What the documented turn-taking rules say about the messages the worker sent.

The current EO does not apply R0 as documented, so a message it forwarded may still be one a
conforming EO would block - worth a line in the log when agents seem not to answer."""

from __future__ import annotations

from humaine_platform.client import Delivered, Outcome
from humaine_platform.rules import Entry, Proposal, RuleSettings, Verdict, evaluate

SENT_KEPT = 50
"""Our delivered messages kept to judge the next one by."""


class RuleNotes:
    """Our delivered messages and when an agent last spoke, to explain outcomes by the rules."""

    def __init__(self) -> None:
        self._sent: list[Entry] = []
        """Our delivered messages, to explain outcomes with the documented rules."""
        self._last_sent_ms = 0
        """When our last message was delivered (worker's clock)."""
        self._agent_replied_ms = 0
        """When an agent's message was last permitted (the EO's verdicts): a documented-R0 note on
        a message sent after an agent answered would be noise."""

    def agent_spoke(self, now_ms: int) -> None:
        """An agent's message was permitted (the EO's verdict on it)."""
        self._agent_replied_ms = now_ms

    def agent_answered(self) -> bool:
        """An agent spoke since our last message."""
        return self._agent_replied_ms > self._last_sent_ms

    def note(self, proposal: Proposal, outcome: Outcome, now_ms: int) -> str:
        """What the documented rules say of ``proposal`` ("" when nothing worth saying); a
        delivered one is remembered."""
        verdict = evaluate(self._sent, proposal, RuleSettings())
        answered = self.agent_answered()
        if isinstance(outcome, Delivered):
            self._sent.append(Entry(proposal, Verdict(True)))
            del self._sent[:-SENT_KEPT]
            self._last_sent_ms = now_ms
        if verdict.permitted or (verdict.rule == "R0" and answered):
            return ""  # R0 only explains agents that do not answer: a note where they did is noise
        return f"the documented {verdict.rule} would block it ({verdict.rationale})"
