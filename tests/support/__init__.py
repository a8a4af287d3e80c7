"""What the tests share, so that no test module imports another.

- ``paths``: the checkout, the fixtures and the artifacts folder.
- ``helpers``: free ports, a real mosquitto, waiting for a condition, the one way to start
  ``humaine-env run`` (:func:`~tests.support.helpers.start_run`) and its configuration.
- ``avatar``: the one way to start Avatar Controllers in-process and speak to them as the EO does
  (the ``start_avatar`` fixture of ``tests/conftest.py`` is built on it).
- ``room``: the transcript worker's side of the bus (a room that speaks and looks, the worker in a
  thread or a process, a collector of what a subscription delivers).
- ``scripted_bus``: an in-process bus for the unit tier.
- ``real_eo``, ``real_utility_generator``, ``books_room``: the platform's real services and the
  room the e2e scenarios play a day in.
- ``camera_assets``, ``pipecat_turn_reference``: the camera tests' images and clips, and
  Pipecat's own end-of-turn analyzer run apart.
"""
