"""A room's avatars are named by ``[core] avatars``: everything derived from the names follows
the configuration - the microphone's normalisation, hotwords and domain model, the voices and
figures of the Avatar Controller, the camera's targets, the demo sellers of the stand-in EO."""

from __future__ import annotations

from avatar.settings import AvatarSettings
from humaine_env.supervisor import seller_ports, stand_in_overrides
from standins.eo.settings import DEFAULT_AGENT_PORTS
from workers.camera.settings import CameraSettings
from workers.microphone.domain import corpus_sentences, domain_words
from workers.microphone.engine_whisper import hotwords_for
from workers.microphone.normalize import normalize_text
from workers.runtime.config import DEFAULT_AVATARS, Config

ROOM = ("Ada", "Max")


def test_the_microphone_writes_and_biases_towards_the_rooms_names() -> None:
    assert normalize_text("max i would like two eggs", avatars=ROOM) == "Max i would like 2 eggs"
    assert normalize_text("ada's price", avatars=ROOM) == "Ada's price"
    assert normalize_text("celia i would like two eggs", avatars=ROOM).startswith("celia")  # not this room's
    assert {"ada", "max"} <= set(domain_words(ROOM)) and "celia" not in domain_words(ROOM)
    sentences = corpus_sentences(400, avatars=ROOM)
    assert any(s.startswith("max ") for s in sentences) and not any("watson" in s for s in sentences)
    assert hotwords_for(["max", "eggs", "Ada"], ROOM) == "Max, eggs, Ada"


def test_each_avatar_gets_the_voice_and_figure_of_its_place_unless_configured() -> None:
    default = AvatarSettings().for_room(DEFAULT_AVATARS)
    renamed = AvatarSettings().for_room(ROOM)
    for place, name in enumerate(ROOM):
        assert renamed.voice_for(name) == default.voice_for(DEFAULT_AVATARS[place])
    assert renamed.looks(ROOM) == {"Ada": "female", "Max": "male"}
    configured = AvatarSettings(voices={"Max": {"engine": "espeak", "voice": "en-us+m3", "look": "male"}}).for_room(ROOM)
    assert configured.voice_for("Max").engine == "espeak" and configured.voice_for("Ada").engine == "festival"


def test_the_camera_has_a_target_for_each_of_the_rooms_avatars_and_no_other() -> None:
    default = CameraSettings()
    renamed = default.for_room(ROOM)
    assert renamed.targets == {"Ada": default.targets["Celia"], "Max": default.targets["Watson"]}
    calibrated = CameraSettings(targets={"Max": {"yaw": -40.0}, "Celia": {"yaw": 30.0}}).for_room(ROOM)
    assert calibrated.targets["Max"].yaw == -40.0 and calibrated.targets["Ada"] == default.targets["Celia"]
    assert set(calibrated.targets) == set(ROOM)


def test_the_demo_sellers_are_the_rooms_avatars_unless_configured() -> None:
    assert seller_ports(DEFAULT_AVATARS) == DEFAULT_AGENT_PORTS
    config = Config.load(None, environ={}, overrides={"avatars": list(ROOM)})
    overrides = stand_in_overrides(config)
    assert overrides["demo_agents.agents"] == "{ Ada = 14007, Max = 14008 }" == overrides["standin.agents"]
    pinned = config.with_overrides({"demo_agents.agents": {"Ada": 15001, "Max": 15002}})
    overrides = stand_in_overrides(pinned)
    assert "demo_agents.agents" not in overrides and overrides["standin.agents"] == "{ Ada = 15001, Max = 15002 }"
    # the room's Next round names the same sellers in each round (unless [rounds] sellers says others)
    assert overrides["rounds.sellers"] == '{ Ada = "http://127.0.0.1:15001", Max = "http://127.0.0.1:15002" }'
    elsewhere = pinned.with_overrides({"rounds.sellers": {"Ada": "http://10.0.0.5:7000"}})
    assert "rounds.sellers" not in stand_in_overrides(elsewhere)


def test_the_printed_page_addresses_open_the_pages_with_the_rooms_token() -> None:
    from humaine_env.supervisor import display_url

    config = Config.load(None, environ={}, overrides={"avatar.port": 7041, "avatar.token": "s3 cr/et"})
    assert display_url(config, "/buyer") == "http://127.0.0.1:7041/buyer?token=s3+cr%2Fet"
    assert display_url(Config.load(None, environ={}, overrides={"avatar.port": 7041}), "/buyer") == "http://127.0.0.1:7041/buyer"
