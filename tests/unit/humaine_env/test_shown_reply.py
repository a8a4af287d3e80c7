"""The console's typed view of a forwarded agent message: the same message as the Avatar
Controller publishes, its body typed for the printer (a hostile body fails at the bus)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from humaine_env.supervisor import ShownReply, describe_reply
from workers.runtime.messages import AgentMessageSeen


def test_an_agent_message_reads_as_a_shown_reply() -> None:
    seen = AgentMessageSeen(source="avatar", message={"speaker": "Celia", "text": "two eggs?", "gesture": ["nod"]})
    shown = ShownReply.model_validate(seen.model_dump(mode="json"))
    assert describe_reply(shown) == 'Celia → buyer: "two eggs?"  gesture: nod'


def test_another_type_on_the_topic_is_not_a_reply() -> None:
    payload = {**AgentMessageSeen(source="avatar", message={"speaker": "Celia"}).model_dump(mode="json"), "type": "status"}
    with pytest.raises(ValidationError):
        ShownReply.model_validate(payload)


def test_a_hostile_body_fails_when_read() -> None:
    payload = AgentMessageSeen(source="avatar", message={"speaker": "Celia", "bid": {"type": "SellOffer", "quantity": "lots"}})
    with pytest.raises(ValidationError):
        ShownReply.model_validate(payload.model_dump(mode="json"))


def test_a_payload_without_a_type_is_an_agent_message_as_the_runtime_reads_it() -> None:
    payload = AgentMessageSeen(source="avatar", message={"speaker": "Celia", "text": "hi"}).model_dump(mode="json")
    del payload["type"]
    assert AgentMessageSeen.model_validate(payload).type == ShownReply.model_validate(payload).type
