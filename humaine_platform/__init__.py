"""The HUMAINE platform's contract, as a library for the room and its stand-ins.

- what is said: the message and round models (:mod:`~humaine_platform.models`), every path and
  service name (:mod:`~humaine_platform.endpoints`), the typed answers (:mod:`~humaine_platform.answers`);
- who is asked: the clients of the EO (:mod:`~humaine_platform.client`) and of the utility
  generator (:mod:`~humaine_platform.utility_generator`), the one TLS context they share, the
  TCP check of a port (:mod:`~humaine_platform.reachable`);
- how it judges: the turn-taking rules as documented (:mod:`~humaine_platform.rules`) and as the
  platform's EO runs them (:mod:`~humaine_platform.eo_rules`), one engine each;
- what the platform's own services compute, ported: the buyer's utility
  (:mod:`~humaine_platform.buyer_utility`), the utilities' draw
  (:mod:`~humaine_platform.utility_draw`), the allocation's check and save
  (:mod:`~humaine_platform.allocation`);
- how the room is wired in: service maps, the EO's ``appSettings.json`` and its checks, ending a
  round early without taking the EO down (:mod:`~humaine_platform.service_map`,
  :mod:`~humaine_platform.wiring`, :mod:`~humaine_platform.end_round`).
"""
