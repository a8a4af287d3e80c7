"""The camera worker's commands."""

from workers.runtime.registry import Command
from workers.runtime.worker_ids import CAMERA

COMMANDS = (
    Command(CAMERA, "workers.camera.cli", "camera worker: head pose and addressee", section="camera"),
    Command("calibrate", "workers.camera.calibrate_cli", "learn where the avatars are from the buyer's seat", section="camera"),
    Command("headpose", "workers.camera.headpose_cli", "head pose and buyer of images, folders or videos: a JSON line a frame",
            section="camera"),
)
