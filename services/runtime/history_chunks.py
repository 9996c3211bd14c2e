"""How a match's archived history is compressed (README, "Storage").

An archive element is a chunk of tail elements (one MessagePack array), zlib-compressed
with a preset dictionary, since a match's events repeat the same names and shapes:

- a match's first chunk: its game's shipped dictionary (``services/<game>/history.zdict``,
  the first commits of a sample match), which a small chunk alone could not learn from;
- every later chunk: the shipped dictionary followed by the match's first chunk.

zlib names the dictionary a stream needs by its Adler-32 (the header's DICTID), so a chunk
says for itself which one it was made with, and chunks stored before the shipped
dictionaries (the first alone, later ones with the first chunk only) still read. A shipped
dictionary is therefore never changed: chunks made with it need it for as long as they
are kept. ``python -m deploy.history_dictionaries`` writes one for a game that has none.
"""

from __future__ import annotations

import functools
import zlib
from pathlib import Path
from typing import Any

import msgspec

from services.catalog import GAME_PACKAGES

DICTIONARY_FILE = "history.zdict"
_SERVICES = Path(__file__).resolve().parents[1]
_unpack = msgspec.msgpack.Decoder().decode

# zlib's header: CMF, FLG; FLG's FDICT bit says the stream's Adler-32 of its dictionary
# (4 bytes, big-endian) follows.
_FDICT = 0x20


class UnknownDictionary(ValueError):
    """A chunk compressed with a dictionary this server does not have."""


def dictionary_path(game: str) -> Path:
    return _SERVICES / GAME_PACKAGES[game] / DICTIONARY_FILE


@functools.cache
def game_dictionary(game: str) -> bytes:
    """The dictionary ``game`` ships (b"": none)."""
    path = dictionary_path(game)
    return path.read_bytes() if path.is_file() else b""


@functools.cache
def _shipped() -> dict[int, bytes]:
    """Every shipped dictionary, by its Adler-32."""
    return {zlib.adler32(d): d for game in GAME_PACKAGES if (d := game_dictionary(game))}


def array_header(count: int) -> bytes:
    """MessagePack's header of an array of ``count`` items (the tail's elements follow it)."""
    return bytes([0x90 | count]) if count < 16 else b"\xdc" + count.to_bytes(2, "big")


def pack_chunk(elements: list[bytes], first_chunk: bytes | None, game: str) -> bytes:
    """The archive element of ``elements`` (packed tail elements) of a ``game`` match whose
    archive starts with ``first_chunk`` (None: this is its first chunk)."""
    raw = array_header(len(elements)) + b"".join(elements)
    preset = game_dictionary(game)
    if first_chunk is not None:
        preset += first_plain(first_chunk)
    if not preset:
        return zlib.compress(raw)
    compressor = zlib.compressobj(zdict=preset)
    return compressor.compress(raw) + compressor.flush()


def first_plain(first_chunk: bytes) -> bytes:
    """A match's first chunk, decompressed: part of every later chunk's dictionary."""
    return _inflate(first_chunk, _preset(first_chunk, b""))


def unpack_chunk(chunk: bytes, first: bytes) -> list[Any]:
    """The tail elements (decoded) of an archive element of a match whose first chunk,
    decompressed, is ``first``."""
    items: list[Any] = _unpack(_inflate(chunk, _preset(chunk, first)))
    return items


def _inflate(chunk: bytes, preset: bytes) -> bytes:
    decompressor = zlib.decompressobj(zdict=preset) if preset else zlib.decompressobj()
    return decompressor.decompress(chunk) + decompressor.flush()


def _preset(chunk: bytes, first: bytes) -> bytes:
    """The dictionary ``chunk`` names: none, ``first``, a shipped one, or a shipped one
    followed by ``first``."""
    if len(chunk) < 6 or not chunk[1] & _FDICT:
        return b""
    wanted = int.from_bytes(chunk[2:6], "big")
    if first and zlib.adler32(first) == wanted:
        return first
    for checksum, shipped in _shipped().items():
        if checksum == wanted:
            return shipped
        # Adler-32 runs on: the checksum of shipped + first, without joining them.
        if first and zlib.adler32(first, checksum) == wanted:
            return shipped + first
    raise UnknownDictionary(
        f"an archived chunk names a dictionary this server lacks (Adler-32 {wanted:#010x})"
    )
