"""The ids the room's workers publish their retained status under.

A worker that depends on another's state names it by these ids - the microphone holds its finals
until the transcript worker is subscribed again, the Avatar Controller and the console follow the
camera's status to know whether gaze is available - so no worker imports another's package."""

CAMERA = "camera"
"""The camera worker: its status tells others whether gaze is available."""
MICROPHONE = "microphone"
TRANSCRIPT = "transcript"
"""The Rich Transcript worker: the microphone holds its finals for it after a broker restart until
its retained status says it has subscribed again."""
AVATAR = "avatar"
"""The Avatar Controller: its status carries the room's round and the console's alerts."""
STANDIN_EO = "orchestrator"
"""The stand-in EO (run starts it when no EO is configured): its worker id and its command."""
DEMO_AGENTS = "demo-agents"
"""The demo sellers: their worker id and their command."""
RECORDER = "recorder"
"""The recorder of the rounds: one session folder per round."""
RECORD_ROUNDS = "record-rounds"
"""The recorder of the rounds' command (its worker is :data:`RECORDER`)."""
