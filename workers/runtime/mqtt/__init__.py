"""The parts of the MQTT bus (:class:`workers.runtime.bus.Bus`), one job each, composed there:
the paho client (:mod:`.paho_client`), the broker's view of our subscriptions (:mod:`.session`),
reconnect reporting (:mod:`.reconnects`), the retained status (:mod:`.status`), payload checks
and handler dispatch (:mod:`.dispatch`), owned retained states (:mod:`.owned`) and messages held
for their reader (:mod:`.gate`). Only the bus composes them; none reads another's attributes."""
