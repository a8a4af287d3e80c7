"""The Rich Transcript worker: final transcripts + attention -> addressed HUMAINE messages."""

WORKER_ID = "transcript"
"""The Rich Transcript worker's default id: the microphone holds its finals for it after a broker
restart until its retained status says it has subscribed again."""
