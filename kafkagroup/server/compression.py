"""The records section of a compressed record batch, decompressed as Kafka's broker reads it.

A v2 batch compresses everything after its 61-byte header with the codec in attributes bits 0-2:

- 1 gzip: a gzip stream (:mod:`zlib`);
- 2 snappy: either the xerial framing Java's SnappyOutputStream writes (magic ``\\x82SNAPPY\\x00``, two int32
  versions, then blocks of int32 length + raw snappy) or one raw snappy block, as librdkafka writes it --
  Kafka's reader (snappy-java's SnappyInputStream) takes both;
- 3 lz4: the LZ4 frame format;
- 4 zstd: a zstd frame.

snappy, lz4 and zstd come from cramjam (one well-kept binding for all three).  Used only where a record's own
fields are needed (a ListOffsets timestamp lookup, on the one batch that holds the answer); appending and
fetching never decompress.
"""
from __future__ import annotations

import struct
import zlib

import cramjam

__all__ = ["GZIP", "SNAPPY", "LZ4", "ZSTD", "decompress_records", "CompressionError"]

GZIP, SNAPPY, LZ4, ZSTD = 1, 2, 3, 4
_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = 16                       # magic (8) + version (4) + compatible version (4)
_BLOCK_LENGTH = struct.Struct(">i")


class CompressionError(ValueError):
    """Compressed records that do not decompress with the batch's codec."""


def decompress_records(codec: int, data: bytes | memoryview) -> bytes:
    """The records section of a batch compressed with ``codec`` (attributes & 0x07)."""
    try:
        if codec == GZIP:
            return zlib.decompress(data, 16 + zlib.MAX_WBITS)
        if codec == SNAPPY:
            return _snappy(bytes(data))
        if codec == LZ4:
            return bytes(cramjam.lz4.decompress(bytes(data)))
        if codec == ZSTD:
            return bytes(cramjam.zstd.decompress(bytes(data)))
    except CompressionError:
        raise
    except Exception as e:          # zlib.error, cramjam's DecompressionError: the bytes are not of this codec
        raise CompressionError(f"records do not decompress with codec {codec}: {type(e).__name__}: {e}") from None
    raise CompressionError(f"unknown compression codec {codec}")


def _snappy(data: bytes) -> bytes:
    if not data.startswith(_XERIAL_MAGIC):
        return bytes(cramjam.snappy.decompress_raw(data))
    out = []
    pos = _XERIAL_HEADER
    while pos < len(data):
        if pos + 4 > len(data):
            raise CompressionError(f"xerial snappy block length cut at byte {pos}")
        (length,) = _BLOCK_LENGTH.unpack_from(data, pos)
        pos += 4
        if length < 0 or pos + length > len(data):
            raise CompressionError(f"xerial snappy block at byte {pos - 4} declares {length} bytes")
        out.append(bytes(cramjam.snappy.decompress_raw(data[pos:pos + length])))
        pos += length
    return b"".join(out)
