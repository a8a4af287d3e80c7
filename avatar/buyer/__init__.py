"""The buyer's assistant: what the buyer in the room sees on ``/buyer`` (a tablet, a phone or a
side screen) - their utility, budget, the sellers' offers, what they have and still need - and
where they confirm each deal and, after the negotiation, save the allocation the EO scores them on.

It takes over the platform's competition-ui's duties toward the human; the EO's side of them
(``/setUtility``, ``/confirmAccept``, round metadata and totals) arrives through the Avatar
Controller's endpoints."""
