"""HTTP serving for the suite's services: the FastAPI edge every service is built on, uvicorn in a
thread with a deadline on slow clients. Knows nothing of the platform's messages."""
