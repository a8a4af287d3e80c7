"""A demo seller's HTTP face: the platform's agent API (``/setUtility``, ``/startRound``,
``/endRound``, ``/receiveMessage``, ``/receiveRejection``) over a :class:`SellerAgent`.

Every endpoint answers at once with an acknowledgement (the EO waits for it). Bodies are read
on the shared edge (:mod:`workers.runtime.http.edge`): not JSON we take is a 400, a body
that is not a JSON object a 422, each with a readable reason, never a crash.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request

from humaine_platform import endpoints as ep
from humaine_platform.models import EndRound, Message, Rejection, SetUtility, StartRound, acknowledgement
from standins.demo_agents.agent import SellerAgent
from workers.runtime.http.edge import BodyDocs, BodyRefused, edge_app, json_body


async def _object(request: Request) -> dict[str, Any]:
    body = await json_body(request)
    if not isinstance(body, dict):
        raise BodyRefused(422, f"the body of {request.url.path} must be a JSON object")
    return body


def create_agent_app(agent: SellerAgent) -> FastAPI:
    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        await agent.aclose()

    app = edge_app(title=f"demo seller {agent.name}", lifespan=lifespan)
    app.state.agent = agent
    docs = BodyDocs(app)

    def route(path: str, handle: Callable[[dict[str, Any]], None], model: Any) -> None:
        async def endpoint(request: Request) -> dict[str, Any]:
            body = await _object(request)
            handle(body)
            return acknowledgement(roundId=body.get("roundId", agent.round_id))

        app.post(path, name=path.strip("/"), openapi_extra=docs(model))(endpoint)

    route(ep.SET_UTILITY, agent.set_utility, SetUtility)
    route(ep.START_ROUND, agent.start_round, StartRound)
    route(ep.END_ROUND, agent.end_round, EndRound)
    route(ep.RECEIVE_MESSAGE, agent.receive_message, Message)
    route(ep.RECEIVE_REJECTION, agent.receive_rejection, Rejection)

    @app.get(ep.HEALTH)
    async def health() -> dict[str, Any]:
        return {"status": "ok", "name": agent.name, "roundId": agent.round_id, "sent": len(agent.sent)}

    return app
