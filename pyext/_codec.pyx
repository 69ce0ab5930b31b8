# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""kafkagroup._codec: the group leader's hot path between Kafka wire bytes and the engine's arrays.

Called through kafkagroup.protocol.leader (decode_group / encode_assignments), which validates the
arguments and feeds the parsed names to the native group builder (kafkagroup._core.build_groups: the
one statement of Kafka's group rules); its pure-Python twin is the reference the whole path must
equal, error messages included. This module only parses and writes bytes.

Files (one concern each, included below; Cython `include` is textual, so this stays one module and the
hot loops keep their inlined calls across files):

- codec/buffers.pxi   growable int32 buffers, checked realloc
- codec/bytes.pxi     keyed hashing, short-string equality, big-endian loads/stores, short copies
- codec/interner.pxi  byte strings -> dense ids, decoded to str once
- codec/reader.pxi    bounds-checked field reads and the ProtocolError they raise
- codec/decoder.pxi   GroupDecoder: member subscriptions -> the group builder's input (names, codes,
                      claims placed with the builder's layout)
- codec/encoder.pxi   encode_assignments: owner[] -> one assignment per member
"""
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcmp, memcpy, memset
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE

import numpy as np
cimport numpy as cnp

from kafkagroup.errors import InvariantError, ProtocolError

cnp.import_array()

include "codec/buffers.pxi"
include "codec/bytes.pxi"
include "codec/interner.pxi"
include "codec/reader.pxi"
include "codec/decoder.pxi"
include "codec/encoder.pxi"
