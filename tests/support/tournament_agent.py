"""A seller agent program for the competition tests: started per round by the room's ``command``.

Standard library only, so it listens within a few tens of milliseconds of its start, as an
agent program at the venue would after its own start-up. It implements the agent API the EO
calls (``/setUtility``, ``/startRound``, ``/endRound``, ``/receiveMessage``, ``/receiveRejection``),
learns which avatar it plays from the ``name`` the EO adds to its ``/setUtility``, and answers a
buyer's message addressed to it with an Accept of one egg at its unit cost times ``1 +
margin``, sent to the EO's ``/relayMessage``. Every call it gets is one JSON line on its standard
output (the room writes it to the round's agent log): the tests read what each agent was given.

    python tournament_agent.py --port 15001 --round r3 --agent A --eo http://127.0.0.1:14010 --margin 0.5
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import urllib.request
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ACK = {"status": "Acknowledged"}
REPLY_AFTER_S = 0.3
"""The addressed seller's turn comes first (the EO's R2), and this is well inside it."""
GOOD = "egg"


class Agent:
    def __init__(self, agent: str, round_id: str, eo_url: str, margin: float) -> None:
        self.agent, self.round_id, self.eo_url, self.margin = agent, round_id, eo_url.rstrip("/"), margin
        self.name = ""
        """The avatar it plays, from the EO's ``/setUtility``."""
        self.unit_cost = 0.0
        self.environment = ""

    def said(self, path: str, body: Any) -> None:
        print(json.dumps({"agent": self.agent, "round": self.round_id, "path": path, "body": body}), flush=True)

    def handle(self, path: str, body: Any) -> None:
        self.said(path, body)
        if not isinstance(body, dict):
            return
        if path == "/setUtility":
            self.name = str(body.get("name") or "")
            cost = (((body.get("utility") or {}).get(GOOD) or {}).get("parameters") or {}).get("unitcost")
            self.unit_cost = float(cost) if isinstance(cost, int | float) else 0.0
        elif path == "/receiveMessage" and body.get("speaker") == "Human" and self.name and body.get("addressee") == self.name:
            self.environment = str(body.get("environmentUUID") or "")
            threading.Thread(target=self.accept, args=(body.get("roundId"),), daemon=True).start()

    def accept(self, round_id: Any) -> None:
        time.sleep(REPLY_AFTER_S)
        price = round(self.unit_cost * (1 + self.margin), 2)
        message = {"roundId": round_id, "speaker": self.name, "addressee": "Human", "role": "seller",
                   "text": f"Deal: an egg for {price:.2f} USD.", "environmentUUID": self.environment,
                   "timeStamp": datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                   "bid": {"type": "Accept", "quantity": {GOOD: 1}, "price": {"unit": "USD", "value": price}}}
        request = urllib.request.Request(self.eo_url + "/relayMessage", data=json.dumps(message).encode(),
                                         headers={"Content-Type": "application/json"}, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                self.said("relayed", {"price": price, "status": answer.status})
        except OSError as exc:
            self.said("relay failed", {"price": price, "error": str(exc)})


def serve(agent: Agent, port: int) -> None:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw or b"null")
            except ValueError:
                body = None
            agent.handle(self.path, body)
            answer = json.dumps(ACK).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *_args: Any) -> None:
            pass

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--round", required=True)
    parser.add_argument("--agent", required=True)
    parser.add_argument("--eo", required=True)
    parser.add_argument("--margin", type=float, default=0.5)
    args = parser.parse_args()
    print(json.dumps({"agent": args.agent, "round": args.round, "path": "started", "body": {"port": args.port}}), flush=True)
    try:
        serve(Agent(args.agent, args.round, args.eo, args.margin), args.port)
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
