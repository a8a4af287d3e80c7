"""The Rich Transcript worker: final transcripts + attention -> addressed HUMAINE messages."""
