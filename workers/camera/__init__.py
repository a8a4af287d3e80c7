"""The camera worker: MediaPipe head pose of the buyer -> which avatar they address."""
