"""How a match's archived history is compressed (docs/storage.md).

An archive element is a chunk of tail elements (one MessagePack array, versions written
as rises: ``plain_chunk``), zlib-compressed with a preset dictionary, since a match's
events repeat the same names and shapes:

- a match's first chunk: its game's shipped dictionary (``services/<game>/history-events.zdict``,
  the commits of sample matches), which a small chunk alone could not learn from;
- every later chunk: the shipped dictionary followed by the match's first chunk.

Later chunks are merged as they pile up: every ``MERGE`` of them (``services/runtime/store.py``)
become one, which compresses 128 commits together rather than 16 at a time (about a
quarter fewer bytes); the first chunk, being part of the others' dictionary, stays as it is.

zlib names the dictionary a stream needs by its Adler-32 (the header's DICTID), so a chunk
says for itself which one it was made with (a game that ships none compresses its first
chunk alone and the later ones with the first). A shipped dictionary is therefore never
changed: chunks made with it need it for as long as they are kept.
``python -m deploy.history_dictionaries`` writes one for a game that has none.
"""

from __future__ import annotations

import functools
import zlib
from pathlib import Path
from typing import Any

import msgspec

from services.catalog import GAME_PACKAGES, rules_module

DICTIONARY_FILE = "history-events.zdict"
_pack = msgspec.msgpack.Encoder().encode
_unpack = msgspec.msgpack.Decoder().decode

# zlib's header: CMF, FLG; FLG's FDICT bit says the stream's Adler-32 of its dictionary
# (4 bytes, big-endian) follows.
_FDICT = 0x20
# A merged chunk is deflated at level 9, which zlib writes in FLG's top two bits (FLEVEL 3;
# a chunk of one hand-off, at the default level 6, has 2). Decompressing ignores FLEVEL, so
# a merged chunk is an ordinary chunk to every reader; the commit script reads it to tell
# which trailing chunks are still to merge (services/runtime/store.py).
MERGED_LEVEL = 9
MERGED_FLEVEL = 3


class UnknownDictionary(ValueError):
    """A chunk compressed with a dictionary this server does not have."""


def dictionary_path(game: str) -> Path:
    return Path(str(rules_module(game).__file__)).parent / DICTIONARY_FILE


@functools.cache
def game_dictionary(game: str) -> bytes:
    """The dictionary ``game`` ships (b"": none)."""
    path = dictionary_path(game)
    return path.read_bytes() if path.is_file() else b""


@functools.cache
def _shipped() -> dict[int, bytes]:
    """Every shipped dictionary, by its Adler-32."""
    return {zlib.adler32(d): d for game in GAME_PACKAGES if (d := game_dictionary(game))}


def plain_chunk(commits: list[list[Any]]) -> bytes:
    """A chunk before compression: ``commits`` (tail elements, decoded) in one MessagePack
    array, each version after the first written as its rise over the one before, negated
    less one (a rise of 1, the usual one, is -2: one byte, the same every commit). A chunk's
    first version is absolute (never negative), so joining chunks needs no rewriting. Every
    commit repeating its version in full broke deflate's matches across commits: a quarter
    more bytes (docs/storage.md)."""
    coded: list[list[Any]] = []
    previous: int | None = None
    for commit in commits:
        version = commit[0]
        coded.append(commit if previous is None else [previous - version - 1, *commit[1:]])
        previous = version
    return _pack(coded)


def _absolute(commits: list[list[Any]]) -> list[list[Any]]:
    """A chunk's commits (decoded, changed in place) with every version absolute again."""
    previous = 0
    for commit in commits:
        if commit[0] < 0:
            commit[0] = previous - commit[0] - 1
        previous = commit[0]
    return commits


def pack_chunk(elements: list[bytes], first_chunk: bytes | None, game: str) -> bytes:
    """The archive element of ``elements`` (packed tail elements) of a ``game`` match whose
    archive starts with ``first_chunk`` (None: this is its first chunk)."""
    raw = plain_chunk([_unpack(element) for element in elements])
    preset = game_dictionary(game)
    if first_chunk is not None:
        preset += first_plain(first_chunk)
    if not preset:
        return zlib.compress(raw)
    return _deflate(raw, preset, zlib.Z_DEFAULT_COMPRESSION)


def merge_chunks(chunks: list[bytes], elements: list[bytes], first_chunk: bytes, game: str) -> bytes:
    """One archive element holding the commits of ``chunks`` (later chunks of a ``game``
    match whose archive starts with ``first_chunk``, in order) and then ``elements``:
    deflate finds more to reuse in eight chunks' worth than in each alone (docs/storage.md)."""
    first = first_plain(first_chunk)
    commits: list[list[Any]] = []
    for chunk in chunks:
        commits += _absolute(_unpack(_inflate(chunk, _preset(chunk, first))))
    commits += [_unpack(element) for element in elements]
    return _deflate(plain_chunk(commits), game_dictionary(game) + first, MERGED_LEVEL)


def is_merged(chunk: bytes) -> bool:
    """Whether an archive element came from ``merge_chunks`` (by its zlib header's level)."""
    return len(chunk) > 1 and chunk[1] >> 6 == MERGED_FLEVEL


def _deflate(raw: bytes, preset: bytes, level: int) -> bytes:
    compressor = zlib.compressobj(level, zdict=preset)
    return compressor.compress(raw) + compressor.flush()


def first_plain(first_chunk: bytes) -> bytes:
    """A match's first chunk, decompressed: part of every later chunk's dictionary."""
    return _inflate(first_chunk, _preset(first_chunk, b""))


def unpack_chunk(chunk: bytes, first: bytes) -> list[Any]:
    """The tail elements (decoded) of an archive element of a match whose first chunk,
    decompressed, is ``first``."""
    return _absolute(_unpack(_inflate(chunk, _preset(chunk, first))))


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
