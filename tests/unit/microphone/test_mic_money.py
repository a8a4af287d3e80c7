"""Prices from Whisper's words to the transcript: the amount the decoder wrote is the amount the
room reads, never "$ $ $" (what the trimmed window's decoder once wrote) and never a number
joined from two (``$4.0`` ``.0`` → ``$4.0.0``).

Two parts. Word lists captured from real decodes of the negotiation audio (faster-whisper's own
``Word`` objects, stock ``transcribe`` with beam 5 and word timings, and this repo's
:class:`WhisperRecognizer`; Festival HTS and espeak-ng voices) go through the real word path
(:func:`words_of`) and the normaliser. And generated amounts, $0.05-$999.99, written the ways
the decoder writes them (``$12.05``, ``$12`` ``.05``, ``$ 12``, "12 dollars and 5 cents",
"twelve dollars five", "a dollar fifty", "fifty cents") are split into words by faster-whisper's
own tokenizer and punctuation merging, then go the same way.
"""

from __future__ import annotations

import inspect
import re
from functools import cache
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from workers.microphone.engine_whisper import bundled_model_path, words_of
from workers.microphone.normalize import normalize_words
from workers.microphone.prices import doubtful_prices

CAPTURED: list[tuple[str, str, list[tuple[str, float, float, float]], list[str]]] = [
    # (voice, what the voice said, faster-whisper's words: (word, start s, end s, probability), the amounts the decoder wrote)
    ('festival:cmu_us_slt_arctic_hts', 'i offer five dollars for the chocolate', [
        (' I', 0.0, 0.5, 0.933), (' offer', 0.5, 0.8, 0.989), (' $5', 0.8, 1.22, 0.688), (' for', 1.22, 1.68, 0.99),
        (' the', 1.68, 1.94, 0.991), (' chocolate.', 1.94, 2.1, 0.986),
    ], ['$5']),
    ('festival:cmu_us_slt_arctic_hts', 'that is too expensive can you do four dollars', [
        (' That', 0.0, 0.42, 0.866), (' is', 0.42, 0.66, 0.982), (' too', 0.66, 0.92, 0.77), (' expensive,', 0.92, 1.44, 0.999),
        (' Ken.', 1.7, 2.04, 0.567), (' You', 2.18, 2.28, 0.961), (' do', 2.28, 2.54, 0.994), (' $4.', 2.54, 2.78, 0.844),
    ], ['$4']),
    ('festival:cmu_us_slt_arctic_hts', 'watson sell me two teaspoons of vanilla for one dollar', [
        (' Watson', 0.0, 0.58, 0.733), (' sell', 0.58, 0.98, 0.871), (' me', 0.98, 1.24, 0.984), (' two', 1.24, 1.46, 0.649),
        (' teaspoons', 1.46, 1.9, 0.993), (' of', 1.9, 2.3, 0.992), (' vanilla', 2.3, 2.48, 0.996), (' for', 2.48, 2.94, 0.893),
        (' $1.', 2.94, 3.2, 0.743),
    ], ['$1']),
    ('festival:cmu_us_slt_arctic_hts', 'hey watson i will pay ten dollars for everything', [
        (' Hey', 0.0, 0.5, 0.776), (' Watson,', 0.5, 0.8, 0.972), (' I', 1.08, 1.08, 0.969), (' will', 1.08, 1.26, 0.993),
        (' pay', 1.26, 1.48, 0.998), (' $10', 1.48, 1.82, 0.892), (' for', 1.82, 2.36, 0.989), (' everything.', 2.36, 2.8, 0.98),
    ], ['$10']),
    ('festival:cmu_us_slt_arctic_hts', 'i need three eggs and one cup of milk for seven dollars', [
        (' I', 0.0, 0.38, 0.926), (' need', 0.38, 0.6, 0.993), (' 3', 0.6, 0.88, 0.632), (' eggs', 0.88, 1.12, 0.931),
        (' and', 1.12, 1.38, 0.987), (' 1', 1.38, 1.64, 0.909), (' cup', 1.64, 1.9, 0.991), (' of', 1.9, 2.04, 0.971),
        (' milk', 2.04, 2.28, 0.998), (' for', 2.28, 2.8, 0.899), (' $7.', 2.8, 3.14, 0.807),
    ], ['$7']),
    ('festival:cmu_us_slt_arctic_hts', 'how about eight dollars and fifty cents', [
        (' How', 0.0, 0.52, 0.732), (' about', 0.52, 0.74, 0.936), (' $8', 0.74, 1.26, 0.866), ('.50?', 1.26, 1.9, 0.955),
    ], ['$8.50']),
    ('festival:cmu_us_slt_arctic_hts', "i'd like to buy five eggs for two dollars", [
        (" I'd", 0.0, 0.46, 0.932), (' like', 0.46, 0.7, 0.999), (' to', 0.7, 0.84, 0.996), (' buy', 0.84, 1.04, 0.999),
        (' 5', 1.04, 1.32, 0.576), (' eggs', 1.32, 1.54, 0.895), (' for', 1.54, 1.92, 0.996), (' $2.', 1.92, 2.16, 0.648),
    ], ['$2']),
    ('festival:cmu_us_slt_arctic_hts', 'the sugar costs three dollars fifty', [
        (' The', 0.0, 0.44, 0.66), (' sugar', 0.44, 0.68, 0.963), (' costs', 0.68, 1.06, 0.516), (' $3', 1.06, 1.46, 0.764),
        ('.50.', 1.46, 2.04, 0.989),
    ], ['$3.50']),
    ('festival:cmu_us_slt_arctic_hts', 'the sugar costs three dollars fifty', [
        (' The', 0.0, 0.44, 0.566), (' sugar', 0.44, 0.68, 0.962), (' cost', 0.68, 1.04, 0.452), (' $3', 1.04, 1.56, 0.805),
        ('.50.', 1.56, 2.04, 0.985),
    ], ['$3.50']),
    ('festival:cmu_us_slt_arctic_hts', 'can you sell me twelve eggs for four dollars', [
        (' Can', 0.0, 0.46, 0.884), (' you', 0.46, 0.7, 0.98), (' sell', 0.7, 0.9, 0.995), (' me', 0.9, 1.08, 0.387),
        (' 12', 1.08, 1.36, 0.953), (' eggs', 1.36, 1.66, 0.539), (' for', 1.66, 1.94, 0.993), (' $4?', 1.94, 2.22, 0.718),
    ], ['$4']),
    ('festival:cmu_us_slt_arctic_hts', 'i will give you six dollars for three bags of flour', [
        (' I', 0.0, 0.36, 0.955), (' will', 0.36, 0.54, 0.989), (' give', 0.54, 0.72, 0.999), (' you', 0.72, 1.02, 0.996),
        (' $6', 1.02, 1.36, 0.833), (' for', 1.36, 2.12, 0.897), (' three', 2.12, 2.38, 0.632), (' bags', 2.38, 2.62, 0.996),
        (' of', 2.62, 2.86, 0.998), (' flour.', 2.86, 3.16, 0.987),
    ], ['$6']),
    ('festival:cmu_us_slt_arctic_hts', 'would you take nine dollars for everything', [
        (' Would', 0.0, 0.4, 0.749), (' you', 0.4, 0.6, 0.992), (' take', 0.6, 0.84, 0.998), (' $9', 0.84, 1.22, 0.859),
        (' for', 1.22, 1.76, 0.977), (' everything?', 1.76, 2.18, 0.983),
    ], ['$9']),
    ('festival:cmu_us_slt_arctic_hts', 'my final offer is fifteen dollars', [
        (' My', 0.0, 0.5, 0.831), (' final', 0.5, 0.8, 0.997), (' offer', 0.8, 1.12, 0.997), (' is', 1.12, 1.52, 0.998),
        (' $15.', 1.52, 1.9, 0.928),
    ], ['$15']),
    ('en-us', 'that is too expensive can you do four dollars', [
        (' That', 0.0, 0.28, 0.835), (' is', 0.28, 0.54, 0.884), (' too', 0.54, 0.7, 0.728), (' expensive,', 0.7, 1.18, 0.998),
        (' can', 1.36, 1.54, 0.969), (' you', 1.54, 1.74, 0.99), (' do', 1.74, 1.98, 0.99), (' $4?', 1.98, 2.32, 0.741),
    ], ['$4']),
    ('en-us', 'watson sell me two teaspoons of vanilla for one dollar', [
        (' and', 0.0, 0.5, 0.07), (' sell', 0.5, 0.86, 0.835), (' me', 0.86, 1.08, 0.918), (' two', 1.08, 1.3, 0.741),
        (' teaspoons', 1.3, 1.7, 0.97), (' of', 1.7, 2.06, 0.29), (' vanilla', 2.06, 2.24, 0.824), (' for', 2.24, 2.58, 0.946),
        (' $1.', 2.58, 2.86, 0.898),
    ], ['$1']),
    ('en-us', 'hey watson i will pay ten dollars for everything', [
        (' Hey', 0.0, 0.32, 0.478), (' watch,', 0.32, 0.6, 0.295), (' so', 0.72, 0.8, 0.891), (' high', 0.8, 0.98, 0.277),
        (' wheel', 0.98, 1.18, 0.714), (' pay', 1.18, 1.48, 0.468), (' $10', 1.48, 1.88, 0.687), (' for', 1.88, 2.36, 0.762),
        (' everything.', 2.36, 2.86, 0.96),
    ], ['$10']),
    ('en-us', 'hey watson i will pay ten dollars for everything', [
        (' Hey', 0.0, 0.34, 0.454), (' watch,', 0.34, 0.6, 0.262), (' so', 0.74, 0.8, 0.901), (' I', 0.8, 0.98, 0.17),
        (' will', 0.98, 1.18, 0.96), (' pay', 1.18, 1.48, 0.977), (' $10', 1.48, 1.92, 0.76), (' for', 1.92, 2.38, 0.869),
        (' everything.', 2.38, 2.88, 0.986),
    ], ['$10']),
    ('en-us', 'i need three eggs and one cup of milk for seven dollars', [
        (' I', 0.0, 0.26, 0.84), (' need', 0.26, 0.54, 0.956), (' 3', 0.54, 0.8, 0.54), (' eggs', 0.8, 1.16, 0.975),
        (' and', 1.16, 1.52, 0.749), (' 1', 1.52, 1.84, 0.859), (' cup', 1.84, 2.02, 0.517), (' of', 2.02, 2.24, 0.851),
        (' milk', 2.24, 2.5, 0.995), (' for', 2.5, 2.82, 0.934), (' 7', 2.82, 3.14, 0.582), (' dollars.', 3.14, 3.44, 0.858),
    ], ['$7']),
    ('en-us', 'i need three eggs and one cup of milk for seven dollars', [
        (' I', 0.0, 0.26, 0.829), (' need', 0.26, 0.54, 0.956), (' three', 0.54, 0.8, 0.206), (' eggs', 0.8, 1.14, 0.99),
        (' and', 1.14, 1.52, 0.702), (' one', 1.52, 1.84, 0.92), (' cup', 1.84, 2.0, 0.67), (' of', 2.0, 2.24, 0.891),
        (' milk', 2.24, 2.5, 0.997), (' for', 2.5, 2.82, 0.903), (' seven', 2.82, 3.14, 0.825), (' dollars.', 3.14, 3.48, 0.983),
    ], ['$7']),
    ('en-us', 'how about eight dollars and fifty cents', [
        (' How', 0.0, 0.32, 0.332), (' about', 0.32, 0.58, 0.942), (' $8', 0.58, 1.06, 0.565), (' and', 1.06, 1.58, 0.345),
        (' 50', 1.58, 2.0, 0.763), (' cents?', 2.0, 2.44, 0.846),
    ], ['$8.50']),
    ('en-us', 'how about eight dollars and fifty cents', [
        (' How', 0.0, 0.32, 0.382), (' about', 0.32, 0.58, 0.921), (' eight', 0.58, 0.84, 0.199),
        (' dollars', 0.84, 1.22, 0.759), (' and', 1.22, 1.72, 0.964), (' fifty', 1.72, 2.06, 0.701),
        (' cents?', 2.06, 2.44, 0.936),
    ], ['$8.50']),
    ('en-us', "i'd like to buy five eggs for two dollars", [
        (" I'd", 0.0, 0.28, 0.91), (' like', 0.28, 0.58, 0.996), (' to', 0.58, 0.76, 0.975), (' buy', 0.76, 0.96, 0.938),
        (' five', 0.96, 1.28, 0.46), (' eggs', 1.28, 1.58, 0.187), (' for', 1.58, 1.86, 0.966), (' two', 1.86, 2.16, 0.714),
        (' dollars.', 2.16, 2.46, 0.979),
    ], ['$2']),
    ('en-us', "i'd like to buy five eggs for two dollars", [
        (" I'd", 0.0, 0.26, 0.907), (' like', 0.26, 0.58, 0.996), (' to', 0.58, 0.76, 0.983), (' buy', 0.76, 0.94, 0.859),
        (' 5X', 0.94, 1.6, 0.345), (' for', 1.6, 1.9, 0.876), (' $2.', 1.9, 2.26, 0.797),
    ], ['$2']),
    ('en-us', 'can you sell me twelve eggs for four dollars', [
        (' Can', 0.0, 0.28, 0.839), (' you', 0.28, 0.52, 0.976), (' sell', 0.52, 0.74, 0.969), (' meat', 0.74, 1.0, 0.461),
        (' well', 1.0, 1.32, 0.786), ('-vexed', 1.32, 1.84, 0.52), (' for', 1.84, 1.98, 0.98), (' four', 1.98, 2.24, 0.57),
        (' dollars?', 2.24, 2.5, 0.974),
    ], ['$4']),
    ('en-us', 'i will give you six dollars for three bags of flour', [
        (' I', 0.0, 0.26, 0.815), (' will', 0.26, 0.46, 0.961), (' give', 0.46, 0.68, 0.986), (' you', 0.68, 0.92, 0.991),
        (' six', 0.92, 1.24, 0.396), (' dollars', 1.24, 1.48, 0.313), (' for', 1.48, 1.92, 0.98), (' free', 1.92, 2.14, 0.596),
        (' magman', 2.14, 2.66, 0.213), (' flour.', 2.66, 2.96, 0.492),
    ], ['$6']),
    ('festival:cmu_us_slt_arctic_hts', 'twenty dollars is too much for that', [
        (' $20', 0.0, 0.72, 0.836), (' is', 0.72, 1.2, 0.981), (' too', 1.2, 1.4, 0.995), (' much', 1.4, 1.66, 0.999),
        (' for', 1.66, 1.88, 0.997), (' that.', 1.88, 2.22, 0.998),
    ], ['$20']),
    ('festival:cmu_us_slt_arctic_hts', "let's make a deal at five dollars", [
        (" Let's", 0.0, 0.52, 0.897), (' make', 0.52, 0.74, 0.993), (' a', 0.74, 0.88, 0.995), (' deal', 0.88, 1.08, 0.997),
        (' at', 1.08, 1.52, 0.996), (' $5.', 1.52, 1.7, 0.837),
    ], ['$5']),
    ('festival:cmu_us_slt_arctic_hts', 'four dollars and ten cents', [
        (' $4', 0.0, 0.82, 0.638), ('.10', 0.82, 1.38, 0.915),
    ], ['$4.10']),
    ('festival:cmu_us_slt_arctic_hts', 'two dollars fifty', [
        (' $2', 0.0, 0.64, 0.898), ('.50.', 0.64, 1.12, 0.972),
    ], ['$2.50']),
    ('festival:cmu_us_slt_arctic_hts', 'two dollars fifty', [
        (' $2', 0.0, 0.66, 0.894), ('.50', 0.66, 1.12, 0.97),
    ], ['$2.50']),
    ('festival:cmu_us_slt_arctic_hts', 'i can pay a dollar fifty', [
        (' I', 0.0, 0.38, 0.927), (' can', 0.38, 0.58, 0.997), (' pay', 0.58, 0.82, 0.996), (' $1', 0.82, 1.1, 0.793),
        ('.50.', 1.1, 1.46, 0.99),
    ], ['$1.50']),
    ('festival:cmu_us_slt_arctic_hts', 'how about twelve dollars and five cents', [
        (' How', 0.0, 0.52, 0.674), (' about', 0.52, 0.8, 0.912), (' $12', 0.8, 1.3, 0.906), ('.05?', 1.3, 1.96, 0.854),
    ], ['$12.05']),
    ('festival:cmu_us_slt_arctic_hts', 'that will be one hundred twenty dollars', [
        (' That', 0.0, 0.42, 0.742), (' will', 0.42, 0.62, 0.995), (' be', 0.62, 1.24, 0.999), (' $120.', 1.24, 1.68, 0.913),
    ], ['$120']),
    ('festival:cmu_us_slt_arctic_hts', 'three dollars and seventy five cents is my offer', [
        (' $3', 0.0, 0.72, 0.856), ('.75', 0.72, 1.96, 0.727), (' is', 1.96, 2.68, 0.965), (' my', 2.68, 2.96, 0.996),
        (' offer.', 2.96, 3.2, 0.996),
    ], ['$3.75']),
    ('en-us', 'twenty dollars is too much for that', [
        (' 20', 0.0, 0.5, 0.609), (' dollars', 0.5, 0.84, 0.106), (' is', 0.84, 1.2, 0.973), (' too', 1.2, 1.32, 0.991),
        (' much', 1.32, 1.58, 0.997), (' for', 1.58, 1.86, 0.964), (' net', 1.86, 2.16, 0.699),
    ], ['$20']),
    ('en-us', 'four dollars and ten cents', [
        (' Four', 0.0, 0.38, 0.219), (' dollars', 0.38, 0.74, 0.887), (' and', 0.74, 1.18, 0.771), (' ten', 1.18, 1.52, 0.687),
        (' cents.', 1.52, 1.78, 0.982),
    ], ['$4.10']),
    ('en-us', 'four dollars and ten cents', [
        (' 4', 0.0, 0.38, 0.24), (' dollars', 0.38, 0.78, 0.693), (' and', 0.78, 1.2, 0.815), (' 10', 1.2, 1.54, 0.972),
        (' cents.', 1.54, 1.82, 0.998),
    ], ['$4.10']),
    ('en-us', 'i can pay a dollar fifty', [
        (' I', 0.0, 0.28, 0.788), (' can', 0.28, 0.52, 0.915), (' pay', 0.52, 0.76, 0.949), (' $0', 0.76, 0.98, 0.214),
        ('.50.', 0.98, 1.44, 0.835),
    ], ['$0.50']),
    ('en-us', 'i can pay a dollar fifty', [
        (' I', 0.0, 0.3, 0.784), (' can', 0.3, 0.52, 0.889), (' pay', 0.52, 0.76, 0.841), (' $0', 0.76, 0.98, 0.368),
        ('.50', 0.98, 1.44, 0.745),
    ], ['$0.50']),
    ('en-us', 'how about twelve dollars and five cents', [
        (' How', 0.0, 0.3, 0.496), (' about', 0.3, 0.68, 0.905), (' twelve', 0.68, 1.06, 0.092), (' dollars', 1.06, 1.48, 0.791),
        (' and', 1.48, 1.94, 0.94), (' five', 1.94, 2.26, 0.989), (' cents?', 2.26, 2.52, 0.989),
    ], ['$12.05']),
    ('en-us', 'three dollars and seventy five cents is my offer', [
        (' three', 0.0, 0.4, 0.17), (' dollars', 0.4, 0.74, 0.528), (' and', 0.74, 1.3, 0.953), (' seventy', 1.3, 1.64, 0.453),
        (' five', 1.64, 2.04, 0.663), (' cents', 2.04, 2.4, 0.967), (' in', 2.4, 2.62, 0.42), (' my', 2.62, 2.8, 0.983),
        (' offer', 2.8, 3.06, 0.84),
    ], ['$3.75']),
]

BARE_SIGN = re.compile(r"^\W*\$\W*$")
"""A word that is a currency sign without its amount."""


def segment(words: list[tuple[str, float, float, float]], no_speech_prob: float = 0.01) -> Any:
    """faster-whisper's own ``Segment`` holding its own ``Word`` objects."""
    from faster_whisper.transcribe import Segment, Word

    ws = [Word(start=s, end=e, word=w, probability=p) for w, s, e, p in words]
    return Segment(
        id=1, seek=0, start=ws[0].start if ws else 0.0, end=ws[-1].end if ws else 0.0, text="".join(w.word for w in ws),
        tokens=[], avg_logprob=-0.2, compression_ratio=1.2, no_speech_prob=no_speech_prob, words=ws, temperature=0.0,
    )


def amounts(words: list[tuple[str, float, float, float]]) -> list[str]:
    """The money words the room reads, after the word path and the normaliser."""
    out = normalize_words(words_of([segment(words)]))
    assert not [w.word for w in out if BARE_SIGN.match(w.word)], [w.word for w in out]
    return [re.sub(r"[^\d$.]+$", "", w.word).rstrip(".") for w in out if w.word.lstrip("\"'(").startswith("$")]


@pytest.mark.parametrize(("voice", "said", "words", "written"), CAPTURED, ids=[f"{v}:{s}" for v, s, _, _ in CAPTURED])
def test_captured_decodes_keep_the_amount_the_decoder_wrote(
    voice: str, said: str, words: list[tuple[str, float, float, float]], written: list[str]
) -> None:
    assert amounts(words) == written, (voice, said, [w for w, *_ in words])


def test_a_corrupt_decode_is_not_repaired_into_a_price() -> None:
    """What the trimmed window's decoder wrote for "my final offer is fifteen dollars": the
    normaliser cannot know the amount and invents none (the fix is in the decode); the final
    says its price is garbled and has no amount."""
    words = [(" My", 0.0, 0.5, 0.7), (" final", 0.5, 0.82, 0.99), (" offer", 0.82, 1.12, 0.99), (" is", 1.12, 1.42, 0.99),
             (" $", 1.42, 1.64, 0.95), (" $", 1.64, 1.9, 0.37), (" $", 1.9, 1.98, 0.66)]
    out = normalize_words(words_of([segment(words)]))
    assert not any(ch.isdigit() for w in out for ch in w.word), out
    assert [(d.heard, d.reasons) for d in doubtful_prices(out)] == [("$ $ $", ("garbled", "no_amount"))]


def test_words_of_keeps_pieces_and_times_and_drops_only_non_speech() -> None:
    words = [(" How", 0.0, 0.52, 0.73), (" about", 0.52, 0.74, 0.94), (" $8", 0.74, 1.26, 0.87), (".50?", 1.26, 1.9, 0.96)]
    got = words_of([segment(words), segment([(" You", 2.0, 2.3, 0.4)], no_speech_prob=0.95), segment([(" .", 3.0, 3.1, 0.5)])])
    assert [(w.word, w.start_ms, w.end_ms) for w in got] == [("How", 0, 520), ("about", 520, 740), ("$8", 740, 1260), (".50?", 1260, 1900)]
    assert [w.word for w in normalize_words(got)] == ["How", "about", "$8.50?"]


# Generated amounts through faster-whisper's tokenizer and word assembly.

_ONES = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen"
).split()
_TENS = "_ _ twenty thirty forty fifty sixty seventy eighty ninety".split()


def spoken(n: int) -> str:
    """0-999 in words, as a recogniser writes them ("one hundred twenty five")."""
    if n < 20:
        return _ONES[n]
    if n < 100:
        return _TENS[n // 10] + ("" if n % 10 == 0 else " " + _ONES[n % 10])
    rest = n % 100
    return _ONES[n // 100] + " hundred" + ("" if rest == 0 else " " + spoken(rest))


def price(cents: int) -> str:
    """How the normaliser writes an amount: ``$12``, ``$12.05``, ``$0.50``."""
    dollars, rest = divmod(cents, 100)
    return f"${dollars}" if rest == 0 else f"${dollars}.{rest:02d}"


def said_as(cents: int, form: str) -> str | None:
    """The amount in one of the ways Whisper writes it; ``None`` where the form does not apply."""
    dollars, rest = divmod(cents, 100)
    unit = "dollar" if dollars == 1 else "dollars"
    if form == "digits":
        return price(cents)
    if form == "digits-cents":  # Whisper's "$8.00" (the normaliser writes "$8")
        return f"${dollars}.{rest:02d}"
    if form == "sign-space":  # the currency sign as a word of its own
        return f"$ {dollars}" if rest == 0 else f"$ {dollars}.{rest:02d}"
    if form == "digit-words":  # "12 dollars and 5 cents", "50 cents"
        if dollars == 0:
            return f"{rest} cents"
        return f"{dollars} {unit}" + (f" and {rest} cents" if rest else "")
    if form == "and-cents":  # "twelve dollars and five cents"
        if dollars == 0:
            return f"{spoken(rest)} {'cent' if rest == 1 else 'cents'}"
        return f"{spoken(dollars)} {unit}" + (f" and {spoken(rest)} {'cent' if rest == 1 else 'cents'}" if rest else "")
    if form == "dollars-then-cents":  # "three dollars fifty"
        if dollars == 0 or rest == 0:
            return None
        return f"{spoken(dollars)} {unit} {spoken(rest)}"
    if form == "a-dollar":  # "a dollar", "a dollar fifty", "a dollar and five cents"
        if dollars != 1:
            return None
        return "a dollar" + ("" if rest == 0 else f" {spoken(rest)}" if rest >= 10 else f" and {spoken(rest)} cents")
    if form == "dollar-sign-and-cents":  # "$8 and 50 cents"
        if dollars == 0 or rest == 0:
            return None
        return f"${dollars} and {rest} cents"
    raise ValueError(form)


FORMS = ("digits", "digits-cents", "sign-space", "digit-words", "and-cents", "dollars-then-cents", "a-dollar", "dollar-sign-and-cents")
CARRIERS = ("I can pay {} for the eggs.", "{} is too much for that.", "How about {}?", "Let's make a deal at {}.", "My final offer is {}")


@cache
def whisper_words() -> Any:
    """Text -> faster-whisper's word list, as its ``add_word_timestamps`` assembles it from the
    decoder's tokens (the tiny.en tokenizer, split on spaces and punctuation, punctuation merged
    with faster-whisper's own defaults), with made-up timings."""
    from faster_whisper import WhisperModel
    from faster_whisper.tokenizer import Tokenizer
    from faster_whisper.transcribe import merge_punctuations
    from tokenizers import Tokenizer as HfTokenizer

    path = bundled_model_path()
    if path is None:
        pytest.skip("the bundled Whisper model is not installed")
    tokenizer = Tokenizer(HfTokenizer.from_file(str(path / "tokenizer.json")), False, task="transcribe", language="en")
    defaults = inspect.signature(WhisperModel.transcribe).parameters
    prepend, append = defaults["prepend_punctuations"].default, defaults["append_punctuations"].default

    def words(text: str) -> list[tuple[str, float, float, float]]:
        pieces, tokens = tokenizer.split_to_word_tokens(tokenizer.encode(" " + text))
        alignment = [
            {"word": w, "tokens": t, "start": 0.3 * i, "end": 0.3 * i + 0.25, "probability": 0.9}
            for i, (w, t) in enumerate(zip(pieces, tokens, strict=True))
        ]
        merge_punctuations(alignment, prepend, append)
        return [(a["word"], a["start"], a["end"], a["probability"]) for a in alignment if a["word"]]

    return words


@settings(max_examples=400, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cents=st.integers(min_value=5, max_value=99_999), form=st.sampled_from(FORMS), carrier=st.sampled_from(CARRIERS))
def test_generated_amounts_come_out_as_said(cents: int, form: str, carrier: str) -> None:
    text = said_as(cents, form)
    if text is None:
        return
    words = whisper_words()(carrier.format(text))
    assert amounts(words) == [price(cents)], (carrier.format(text), [w for w, *_ in words])


EDGES = [
    (cents, form)
    for cents in (5, 50, 99, 100, 101, 110, 150, 250, 410, 1005, 1500, 2000, 99_999)
    for form in FORMS
    if said_as(cents, form) is not None
]


@pytest.mark.parametrize(("cents", "form"), EDGES, ids=[f"{price(c)}-{f}" for c, f in EDGES])
def test_edge_amounts_in_every_form(cents: int, form: str) -> None:
    words = whisper_words()(f"How about {said_as(cents, form)} for the eggs?")
    assert amounts(words) == [price(cents)], [w for w, *_ in words]
