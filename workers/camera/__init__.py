"""The camera worker: MediaPipe head pose of the buyer -> which avatar they address."""

WORKER_ID = "camera"
"""The camera worker's default id: its retained status tells others whether gaze is available."""
