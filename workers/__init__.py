"""The workers' floors: the shared runtime (:mod:`workers.runtime.worker`) and the two sensing workers
(:mod:`workers.camera`, :mod:`workers.microphone`). Nothing here: importing a worker costs only
what that worker needs."""
