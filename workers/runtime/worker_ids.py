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
