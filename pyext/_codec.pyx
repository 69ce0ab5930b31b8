# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""kafkagroup._codec: the group leader's hot path between Kafka wire bytes and the engine's arrays.

Called through kafkagroup.protocol.leader (decode_group / encode_assignments), which validates the
arguments, orders the members and documents the rules; its pure-Python twin is the reference this
module must equal, error messages included.

GroupDecoder.decode reads every member's ConsumerProtocolSubscription in place (no Python object per
member, per topic occurrence or per partition), in two phases over the members (see the class):

- Subscribed topics (phase 1): Java members send their topic list sorted, so most members of a group
  send the same bytes. When a member's topic array (count and bytes) equals the previous member's,
  its ids are copied wholesale after one memcmp. Otherwise each name is matched against a hint (the
  previous member's list at a cursor advanced as in a merge) and, failing that, looked up in an
  open-addressing table keyed by CPython's seeded hash of the raw bytes; a name is decoded to str
  (strict UTF-8) once, when first seen, and its partition count looked up in the metadata then.
- Owned partitions or sticky previous_assignment (phase 2, after the topic universe is known): each
  topic is compared, length prefix included, with the member's own subscription entry at a cursor
  (claims are a sorted subset of the sorted subscription), and each partition is byte-swapped,
  range-checked and written straight as a global partition id.

The decoder keeps its buffers between calls (a group leader decodes every rebalance), so the steady
state allocates only the arrays it returns. Retained memory is about 4 bytes per subscription entry
plus 4 bytes per owned partition of the largest recent group; a buffer more than 4x larger than the
last call needed is freed.

Limits: every count read from the wire is checked against the bytes left (count * smallest element
size) before it is used, and buffers grow by at most a fixed fraction of each member's byte length,
so memory stays O(input size). Strings point into the callers' bytes objects, which the argument list
keeps alive for the duration of the call; nothing points into them after the call returns.

encode_assignments: two passes over owner[] in partition order (topic by topic): the first counts each
member's partitions, topic groups and name bytes; the second writes every member's exactly-sized bytes
object in place through one write cursor per member.
"""
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcmp, memcpy, memset
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE

import numpy as np
cimport numpy as cnp

from kafkagroup.errors import InvalidGroupError, InvariantError, ProtocolError

cnp.import_array()

# ---------------------------------------------------------------------------------------------
# growable int32 buffer (capacity doubles; only ever reserved for sizes bounded by the bytes of the
# message being read)

cdef struct I32Vec:
    int32_t* data
    Py_ssize_t size
    Py_ssize_t cap

cdef int vec_reserve(I32Vec* v, Py_ssize_t need) except -1:
    cdef Py_ssize_t cap
    cdef int32_t* grown
    if need <= v.cap:
        return 0
    cap = v.cap * 2 if v.cap else 4096
    while cap < need:
        cap *= 2
    grown = <int32_t*> realloc(v.data, cap * sizeof(int32_t))
    if grown == NULL:
        raise MemoryError()
    v.data = grown
    v.cap = cap
    return 0

cdef void vec_trim(I32Vec* v, Py_ssize_t used) noexcept:
    """Free a buffer that is far larger than the last call needed (bounds what an idle decoder holds)."""
    if v.cap > 262144 and v.cap > 4 * used:
        free(v.data)
        v.data = NULL
        v.cap = 0
    v.size = 0


cdef void* _realloc_or_raise(void* p, size_t size) except NULL:
    cdef void* grown = realloc(p, size)
    if grown == NULL:
        raise MemoryError()
    return grown

# ---------------------------------------------------------------------------------------------
# string interning by raw bytes

cdef extern from *:
    """
    /* CPython's keyed hash of a byte string (SipHash, seeded per process like str hashes), so a
       member cannot pick names that collide in the interning table. Py_HashBuffer from 3.14 on. */
    #if PY_VERSION_HEX >= 0x030E0000
    #define kg_hash_bytes(p, n) Py_HashBuffer((const void*)(p), (n))
    #else
    #define kg_hash_bytes(p, n) _Py_HashBytes((const void*)(p), (n))
    #endif
    """
    Py_hash_t kg_hash_bytes(const uint8_t* p, Py_ssize_t n) noexcept


cdef inline uint64_t _word(const uint8_t* p) noexcept nogil:
    cdef uint64_t x
    memcpy(&x, p, 8)
    return x


cdef inline bint bytes_equal(const uint8_t* a, const uint8_t* b, Py_ssize_t n) noexcept nogil:
    """Equality of two byte strings without a libc call or a loop for names up to 32 bytes (most
    topic names): overlapping 8-byte words, differences OR-ed together; longer names 32 bytes a step."""
    cdef uint64_t d
    cdef Py_ssize_t i
    if n > 32:
        i = 0
        while i + 32 < n:
            d = ((_word(a + i) ^ _word(b + i)) | (_word(a + i + 8) ^ _word(b + i + 8))
                 | (_word(a + i + 16) ^ _word(b + i + 16)) | (_word(a + i + 24) ^ _word(b + i + 24)))
            if d:
                return False
            i += 32
        a += n - 32
        b += n - 32
        n = 32
    if n >= 16:
        return ((_word(a) ^ _word(b)) | (_word(a + 8) ^ _word(b + 8))
                | (_word(a + n - 16) ^ _word(b + n - 16)) | (_word(a + n - 8) ^ _word(b + n - 8))) == 0
    if n >= 8:
        return ((_word(a) ^ _word(b)) | (_word(a + n - 8) ^ _word(b + n - 8))) == 0
    for i in range(n):
        if a[i] != b[i]:
            return False
    return True


cdef class _Interner:
    """Distinct byte strings -> dense ids in first-seen order, with their decoded str and, per id, the
    decoder's bookkeeping (partition count, subscribed flag, last member listing it, global id of its
    partition 0). reset() forgets the strings but keeps the memory."""
    cdef const uint8_t** ptrs
    cdef int32_t* lens
    cdef uint64_t* hashes
    cdef int64_t* count_of     # partitions in the metadata, -1 = not in the metadata
    cdef uint8_t* subscribed   # 1 when some member subscribes to it
    cdef uint32_t* limit       # partitions in the metadata, 0 = not in the metadata
    cdef int32_t* stamp        # 1 + the last member whose subscription lists it (0 = none)
    cdef int64_t* base_of      # global id of its partition 0, -1 = not assignable (no subscriber / metadata)
    cdef Py_ssize_t n, cap
    cdef int32_t* table
    cdef Py_ssize_t mask
    cdef public list names
    cdef Py_ssize_t bad_pos   # position of the invalid byte after a failed decode

    def __cinit__(self):
        self.names = []
        self.n = 0
        self.cap = 0
        self.mask = 0

    def __dealloc__(self):
        free(self.ptrs)
        free(self.lens)
        free(self.hashes)
        free(self.count_of)
        free(self.subscribed)
        free(self.limit)
        free(self.stamp)
        free(self.base_of)
        free(self.table)

    cdef void reset(self) noexcept:
        if self.n:
            memset(self.table, 0xFF, (self.mask + 1) * sizeof(int32_t))
        self.n = 0
        self.names = []

    cdef int _grow_table(self) except -1:
        cdef Py_ssize_t size = (self.mask + 1) * 2 if self.mask else 1024
        cdef int32_t* table = <int32_t*> realloc(self.table, size * sizeof(int32_t))
        cdef Py_ssize_t i, slot
        if table == NULL:
            raise MemoryError()
        self.table = table
        self.mask = size - 1
        memset(table, 0xFF, size * sizeof(int32_t))
        for i in range(self.n):
            slot = <Py_ssize_t>(self.hashes[i] & <uint64_t>self.mask)
            while table[slot] >= 0:
                slot = (slot + 1) & self.mask
            table[slot] = <int32_t>i
        return 0

    cdef int _grow_entries(self) except -1:
        cdef Py_ssize_t cap = self.cap * 2 if self.cap else 256
        self.ptrs = <const uint8_t**> _realloc_or_raise(<void*> self.ptrs, cap * sizeof(void*))
        self.lens = <int32_t*> _realloc_or_raise(<void*> self.lens, cap * sizeof(int32_t))
        self.hashes = <uint64_t*> _realloc_or_raise(<void*> self.hashes, cap * sizeof(uint64_t))
        self.count_of = <int64_t*> _realloc_or_raise(<void*> self.count_of, cap * sizeof(int64_t))
        self.subscribed = <uint8_t*> _realloc_or_raise(<void*> self.subscribed, cap * sizeof(uint8_t))
        self.limit = <uint32_t*> _realloc_or_raise(<void*> self.limit, cap * sizeof(uint32_t))
        self.stamp = <int32_t*> _realloc_or_raise(<void*> self.stamp, cap * sizeof(int32_t))
        self.base_of = <int64_t*> _realloc_or_raise(<void*> self.base_of, cap * sizeof(int64_t))
        self.cap = cap
        return 0

    cdef inline bint same(self, int32_t e, const uint8_t* p, int32_t n) noexcept:
        return self.lens[e] == n and bytes_equal(self.ptrs[e], p, n)

    cdef int32_t intern(self, const uint8_t* p, int32_t n) except -2:
        """Id of the string, adding it if new; -1 when it is new and not valid UTF-8 (bad_pos set)."""
        cdef uint64_t h
        cdef Py_ssize_t slot
        cdef int32_t e
        if (self.n + 1) * 2 > self.mask + 1:
            self._grow_table()
        h = <uint64_t>kg_hash_bytes(p, n)
        slot = <Py_ssize_t>(h & <uint64_t>self.mask)
        while True:
            e = self.table[slot]
            if e < 0:
                break
            if self.hashes[e] == h and self.same(e, p, n):
                return e
            slot = (slot + 1) & self.mask
        try:
            name = (<const char*> p)[:n].decode("utf-8")
        except UnicodeDecodeError as exc:
            self.bad_pos = exc.start
            return -1
        if self.n == self.cap:
            self._grow_entries()
        e = <int32_t> self.n
        self.ptrs[e] = p
        self.lens[e] = n
        self.hashes[e] = h
        self.count_of[e] = -1
        self.subscribed[e] = 0
        self.limit[e] = 0
        self.stamp[e] = 0
        self.base_of[e] = -1
        self.table[slot] = e
        self.n += 1
        self.names.append(name)
        return e

# ---------------------------------------------------------------------------------------------
# reading fields; a failure fills Err and the caller raises one formatted ProtocolError

cdef enum Field:
    F_VERSION, F_TOPICS, F_TOPIC_I, F_USER_DATA, F_OWNED, F_OWNED_TOPIC, F_OWNED_PARTS,
    F_GENERATION, F_RACK, F_END, F_PREV, F_PREV_TOPIC, F_PREV_PARTS

cdef enum Problem:
    E_TRUNC16, E_TRUNC32, E_STR_LEN, E_STR_EXCEEDS, E_UTF8, E_BYTES_LEN, E_BYTES_EXCEEDS,
    E_ARRAY_COUNT, E_ARRAY_SIZE, E_TRAILING, E_VERSION

cdef struct Err:
    int problem
    int field
    Py_ssize_t index      # array index in the field name, or the version for F_END
    Py_ssize_t offset     # where the field starts
    int64_t a             # values quoted in the message
    int64_t b
    int64_t c

cdef struct Cur:
    const uint8_t* p
    Py_ssize_t n
    Py_ssize_t pos

cdef inline void fail(Err* e, int problem, int field, Py_ssize_t index, Py_ssize_t offset,
                      int64_t a, int64_t b, int64_t c) noexcept:
    e.problem = problem
    e.field = field
    e.index = index
    e.offset = offset
    e.a = a
    e.b = b
    e.c = c

cdef extern from *:
    """
    /* Big-endian int32 load/store: one unaligned move and a byte swap on little-endian GCC/Clang
       targets, portable shifts elsewhere. */
    #include <string.h>
    #include <stdint.h>
    static inline uint32_t kg_load_be32(const uint8_t* p) {
    #if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        uint32_t v; memcpy(&v, p, 4); return __builtin_bswap32(v);
    #else
        return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
    #endif
    }
    static inline void kg_store_be32(char* w, uint32_t v) {
    #if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        v = __builtin_bswap32(v); memcpy(w, &v, 4);
    #else
        w[0] = (char)(v >> 24); w[1] = (char)(v >> 16); w[2] = (char)(v >> 8); w[3] = (char)v;
    #endif
    }
    """
    uint32_t kg_load_be32(const uint8_t* p) noexcept nogil
    void kg_store_be32(char* w, uint32_t v) noexcept nogil

cdef inline int32_t be32(const uint8_t* p) noexcept:
    return <int32_t>kg_load_be32(p)

cdef inline int16_t be16(const uint8_t* p) noexcept:
    return <int16_t>((<uint32_t>p[0] << 8) | <uint32_t>p[1])

cdef inline bint rd_i16(Cur* c, Err* e, int field, Py_ssize_t idx, int16_t* out) noexcept:
    if c.n - c.pos < 2:
        fail(e, E_TRUNC16, field, idx, c.pos, c.n - c.pos, 0, 0)
        return False
    out[0] = be16(c.p + c.pos)
    c.pos += 2
    return True

cdef inline bint rd_i32(Cur* c, Err* e, int field, Py_ssize_t idx, int32_t* out) noexcept:
    if c.n - c.pos < 4:
        fail(e, E_TRUNC32, field, idx, c.pos, c.n - c.pos, 0, 0)
        return False
    out[0] = be32(c.p + c.pos)
    c.pos += 4
    return True

cdef inline bint rd_str(Cur* c, Err* e, int field, Py_ssize_t idx, bint nullable,
                        Py_ssize_t* start, int32_t* length) noexcept:
    """String field: on success c.pos is past it and the bytes are c.p[c.pos - length : c.pos]."""
    cdef int16_t n
    start[0] = c.pos
    if not rd_i16(c, e, field, idx, &n):
        return False
    if n < 0:
        if nullable and n == -1:
            length[0] = -1
            return True
        fail(e, E_STR_LEN, field, idx, start[0], n, 0, 0)
        return False
    if n > c.n - c.pos:
        fail(e, E_STR_EXCEEDS, field, idx, start[0], n, c.n - c.pos, 0)
        return False
    length[0] = n
    c.pos += n
    return True

cdef inline bint rd_bytes(Cur* c, Err* e, int field, Py_ssize_t* data, int32_t* length) noexcept:
    cdef Py_ssize_t start = c.pos
    cdef int32_t n
    if not rd_i32(c, e, field, 0, &n):
        return False
    if n < 0:
        if n == -1:
            length[0] = -1
            data[0] = c.pos
            return True
        fail(e, E_BYTES_LEN, field, 0, start, n, 0, 0)
        return False
    if n > c.n - c.pos:
        fail(e, E_BYTES_EXCEEDS, field, 0, start, n, c.n - c.pos, 0)
        return False
    data[0] = c.pos
    length[0] = n
    c.pos += n
    return True

cdef inline bint rd_count(Cur* c, Err* e, int field, Py_ssize_t idx, int64_t min_size, int32_t* out) noexcept:
    cdef Py_ssize_t start = c.pos
    cdef int32_t n
    if not rd_i32(c, e, field, idx, &n):
        return False
    if n < 0:
        fail(e, E_ARRAY_COUNT, field, idx, start, n, 0, 0)
        return False
    if <int64_t>n * min_size > c.n - c.pos:
        fail(e, E_ARRAY_SIZE, field, idx, start, n, <int64_t>n * min_size, c.n - c.pos)
        return False
    out[0] = n
    return True


_FIELD_NAMES = {
    F_VERSION: "version", F_TOPICS: "topics", F_TOPIC_I: "topics[{}]", F_USER_DATA: "user_data",
    F_OWNED: "owned_partitions", F_OWNED_TOPIC: "owned_partitions[{}].topic",
    F_OWNED_PARTS: "owned_partitions[{}].partitions", F_GENERATION: "generation_id", F_RACK: "rack_id",
    F_END: "end of v{} message", F_PREV: "previous_assignment", F_PREV_TOPIC: "previous_assignment[{}].topic",
    F_PREV_PARTS: "previous_assignment[{}].partitions",
}


cdef object protocol_error(str what, Err* e):
    """The ProtocolError the pure-Python Reader raises for the same failure (same words)."""
    field = _FIELD_NAMES[e.field].format(e.index)
    p = e.problem
    if p == E_TRUNC16:
        problem = f"truncated: int16 needs 2 bytes, {e.a} left"
    elif p == E_TRUNC32:
        problem = f"truncated: int32 needs 4 bytes, {e.a} left"
    elif p == E_STR_LEN:
        problem = f"invalid string length {e.a}"
    elif p == E_STR_EXCEEDS:
        problem = f"string length {e.a} exceeds the {e.b} bytes left"
    elif p == E_UTF8:
        problem = f"invalid UTF-8 at byte {e.a}"
    elif p == E_BYTES_LEN:
        problem = f"invalid bytes length {e.a}"
    elif p == E_BYTES_EXCEEDS:
        problem = f"bytes length {e.a} exceeds the {e.b} bytes left"
    elif p == E_ARRAY_COUNT:
        problem = f"invalid array count {e.a}"
    elif p == E_ARRAY_SIZE:
        problem = f"array count {e.a} needs at least {e.b} bytes, {e.c} left"
    elif p == E_TRAILING:
        problem = f"{e.a} unexpected trailing bytes"
    else:
        problem = f"unsupported version {e.a}"
    return ProtocolError(f"{what}: {field} at byte offset {e.offset}: {problem}")

# ---------------------------------------------------------------------------------------------
# decode

cdef enum Mode:  # where owned partitions and generation come from (leader.MODE_*)
    MODE_SUBSCRIPTION = 0
    MODE_STICKY = 1
    MODE_COOPERATIVE = 2


def _java_key(str s):
    return s.encode("utf-16-be", "surrogatepass")


def _by_java_name(list names, list ids):
    """ids sorted by Java String.compareTo of their names."""
    return sorted(ids, key=[_java_key(n) for n in names].__getitem__)


cdef struct MemberState:   # what phase 1 leaves for phase 2, per member
    Py_ssize_t rest        # byte offset after user_data (owned partitions start there)
    Py_ssize_t ud_at       # user_data offset
    int32_t ud_len         # user_data length, -1 = null
    int16_t version

cdef struct Expect:        # one topic of the current member's subscription, for matching its claims
    const uint8_t* name
    int64_t base           # the interner's base_of
    uint64_t tail          # name_tail(name): a cheap first test while scanning
    int32_t length
    int32_t topic
    uint32_t limit


cdef inline uint64_t name_tail(const uint8_t* p, Py_ssize_t n) noexcept:
    """The last 8 bytes of a name (zero-padded when shorter): where names of one family differ."""
    cdef uint64_t x = 0
    if n >= 8:
        memcpy(&x, p + n - 8, 8)
    else:
        memcpy(&x, p, n)
    return x

# How far past its cursor a claim's topic is looked for in the member's own subscription after a miss
# (owned topics are a sorted subset of the sorted subscription; a longer gap costs a hash lookup).
cdef enum:
    RESYNC_WINDOW = 16


cdef class GroupDecoder:
    """Decodes a group's member subscriptions into the engine's arrays; reusable, not reentrant
    (one call at a time per instance: kafkagroup.protocol.leader keeps a pool).

    Two phases over the members, in MemberInfo order. Phase 1 reads each member's version, topics and
    user data; the topic universe (subscribed and in the metadata, Java order) follows from it. Phase
    2 reads the rest (owned partitions, generation, rack; sticky user data) and writes each valid claim
    straight as a global partition id. Errors keep the single-pass order: the first malformed member
    in MemberInfo order (a phase-1 failure of member f is raised after phase 2 has checked members
    before f), then a topic listed twice, then the partition total, then (strict) an invalid claim."""
    cdef _Interner topics
    cdef _Interner racks
    cdef I32Vec sub_ids       # interned topic ids, all members concatenated (wire order)
    cdef I32Vec owned         # global ids of valid claims, all members concatenated
    cdef I32Vec final_id      # per interned topic: its id in the returned topic list, -1 = not in it
    cdef MemberState* state
    cdef Py_ssize_t state_cap
    cdef Expect* expect             # the current member's subscription, resolved (phase 2)
    cdef Py_ssize_t expect_cap
    cdef Py_ssize_t expect_len
    cdef Py_ssize_t expect_from     # where in sub_ids it was built from, -1 = not built
    cdef dict counts
    cdef int mode
    cdef bint strict
    cdef bint busy
    # the previous member's topic array, for the wholesale match
    cdef const uint8_t* prev_bytes
    cdef Py_ssize_t prev_len
    cdef int32_t prev_count
    cdef Py_ssize_t prev_sub_start
    cdef Py_ssize_t first_dup       # first member listing a topic twice, -1 = none
    cdef Py_ssize_t bad_member      # first invalid claim (strict): member, interned topic, partition
    cdef int32_t bad_topic
    cdef int32_t bad_part
    cdef int64_t dropped            # claims dropped (strict=False)

    def __cinit__(self):
        self.topics = _Interner()
        self.racks = _Interner()

    def __dealloc__(self):
        free(self.sub_ids.data)
        free(self.owned.data)
        free(self.final_id.data)
        free(self.state)
        free(self.expect)

    cdef int32_t intern_topic(self, Cur* c, Err* e, int field, Py_ssize_t idx, Py_ssize_t start,
                              int32_t n) except -2:
        """The slow path: hash lookup, and for a new name UTF-8 decoding and the metadata lookup."""
        cdef Py_ssize_t before = self.topics.n
        cdef int32_t t = self.topics.intern(c.p + c.pos - n, n)
        if t < 0:
            fail(e, E_UTF8, field, idx, start, start + 2 + self.topics.bad_pos, 0, 0)
            return -1
        if self.topics.n != before:
            count = self.counts.get(self.topics.names[t])
            if count is not None:
                self.topics.count_of[t] = count
                self.topics.limit[t] = <uint32_t>count   # < 2^31 (kafkagroup.model.topic_specs)
        return t

    # ---- phase 1: version, topics, user data

    cdef bint read_topics(self, Cur* c, Err* e, int32_t count, int32_t stamp) except -1:
        """The subscription's topic names -> sub_ids (capacity reserved by the caller)."""
        cdef _Interner it = self.topics
        cdef const uint8_t* p = c.p
        cdef Py_ssize_t n = c.n, pos = c.pos, first = c.pos, start, cursor = 0, j, stop
        cdef Py_ssize_t prev_count = self.prev_count
        cdef int32_t i, t, hint, length
        cdef int32_t* out = self.sub_ids.data + self.sub_ids.size
        cdef const int32_t* prev = self.sub_ids.data + self.prev_sub_start
        cdef const int32_t* lens = it.lens
        cdef const uint8_t** ptrs = it.ptrs
        cdef int32_t* stamps = it.stamp
        cdef uint8_t* subscribed = it.subscribed
        # Wholesale: the same count and bytes as the previous member decode to the same ids (and the
        # same duplicate-topic verdict, already recorded).
        if (count > 0 and count == prev_count and n - pos >= self.prev_len
                and memcmp(p + pos, self.prev_bytes, self.prev_len) == 0):
            memcpy(out, prev, count * sizeof(int32_t))
            c.pos += self.prev_len
            self.sub_ids.size += count
            return True
        for i in range(count):
            start = pos
            # hint: the previous member's list at a cursor that advances like a merge of two sorted
            # lists (compared length prefix included), then the entry after it (this member lacks
            # one topic the previous had), so a topic added costs one hash lookup, not one per later
            # topic, and a topic dropped none
            t = -1
            for j in range(cursor, min(cursor + 2, prev_count)):
                hint = prev[j]
                length = lens[hint]
                if n - pos >= length + 2 and be16(p + pos) == length and bytes_equal(ptrs[hint], p + pos + 2, length):
                    t = hint
                    pos += 2 + length
                    cursor = j + 1
                    break
            if t < 0:
                c.pos = pos
                if not rd_str(c, e, F_TOPIC_I, i, False, &start, &length):
                    return False
                pos = c.pos
                t = self.intern_topic(c, e, F_TOPIC_I, i, start, length)
                if t < 0:
                    return False
                lens = it.lens   # interning may have grown the arrays
                ptrs = it.ptrs
                stamps = it.stamp
                subscribed = it.subscribed
                stop = min(cursor + RESYNC_WINDOW, prev_count)
                for j in range(cursor, stop):
                    if prev[j] == t:
                        cursor = j + 1
                        break
            if stamps[t] == stamp and self.first_dup < 0:
                self.first_dup = stamp - 1
            stamps[t] = stamp
            subscribed[t] = 1
            out[i] = t
        c.pos = pos
        self.sub_ids.size += count
        self.prev_count = count
        self.prev_bytes = p + first
        self.prev_len = pos - first
        self.prev_sub_start = self.sub_ids.size - count
        return True

    cdef bint head(self, Py_ssize_t m, const uint8_t* p, Py_ssize_t n, Err* e) except -1:
        cdef Cur c
        cdef MemberState* st = &self.state[m]
        cdef int32_t count
        c.p = p
        c.n = n
        c.pos = 0
        vec_reserve(&self.sub_ids, self.sub_ids.size + n // 2)   # a topic name takes >= 2 bytes
        if not rd_i16(&c, e, F_VERSION, 0, &st.version):
            return False
        if st.version < 0:
            fail(e, E_VERSION, F_VERSION, 0, 0, st.version, 0, 0)
            return False
        if not rd_count(&c, e, F_TOPICS, 0, 2, &count):
            return False
        if not self.read_topics(&c, e, count, <int32_t>(m + 1)):
            return False
        if not rd_bytes(&c, e, F_USER_DATA, &st.ud_at, &st.ud_len):
            return False
        st.rest = c.pos
        return True

    # ---- phase 2: owned partitions, generation, rack; sticky user data

    cdef inline void invalid_claim(self, Py_ssize_t m, int32_t t, int32_t part) noexcept:
        """A claim outside the metadata: the first one is the strict error; otherwise dropped."""
        if self.strict and self.bad_member < 0:
            self.bad_member = m
            self.bad_topic = t
            self.bad_part = part
        self.dropped += 1

    cdef int prepare_expect(self, Py_ssize_t sub_start, Py_ssize_t sub_end) except -1:
        """Resolve the member's subscription for read_claims, unless it lists the same ids as the
        list resolved last (most members of a group do)."""
        cdef Py_ssize_t i, count = sub_end - sub_start
        cdef const int32_t* ids = self.sub_ids.data
        cdef _Interner it = self.topics
        cdef Expect* x
        cdef int32_t t
        if (self.expect_from >= 0 and count == self.expect_len
                and memcmp(ids + sub_start, ids + self.expect_from, count * sizeof(int32_t)) == 0):
            return 0
        if count > self.expect_cap:
            self.expect = <Expect*> _realloc_or_raise(self.expect, count * sizeof(Expect))
            self.expect_cap = count
        for i in range(count):
            t = ids[sub_start + i]
            x = &self.expect[i]
            x.name = it.ptrs[t]
            x.length = it.lens[t]
            x.topic = t
            x.base = it.base_of[t]
            x.limit = it.limit[t]
            x.tail = name_tail(x.name, x.length)
        self.expect_len = count
        self.expect_from = sub_start
        return 0

    cdef bint read_claims(self, Cur* c, Err* e, int f_array, int f_topic, int f_parts,
                          Py_ssize_t m, bint record) except -1:
        """[topic, [int32]] entries (owned partitions or sticky previous_assignment); with ``record``,
        valid claims go to ``owned`` as global ids (the caller reserved room for every partition the
        member's bytes can hold, 4 bytes each). This is the leader's hottest loop (one iteration per
        owned topic of every member): Java sends claims sorted, a subset of the sorted subscription, so
        each topic is first compared, length prefix included, with the subscription entry at a cursor
        (prepare_expect), and only on a miss parsed field by field and looked up by hash."""
        cdef _Interner it = self.topics
        cdef const uint8_t* p = c.p
        cdef Py_ssize_t n = c.n, pos, start, cursor = 0, j, stop
        cdef Py_ssize_t n_expect = self.expect_len
        cdef const Expect* expect = self.expect
        cdef const Expect* x
        cdef int32_t groups, count, t, g, k, length, part
        cdef int32_t* w = self.owned.data + self.owned.size
        cdef int64_t base
        cdef uint32_t limit
        cdef uint64_t tail
        cdef bint matched
        if not rd_count(c, e, f_array, 0, 6, &groups):
            return False
        pos = c.pos
        for g in range(groups):
            # topic: a non-null string
            start = pos
            matched = False
            if cursor < n_expect:
                x = &expect[cursor]
                length = x.length
                if n - pos >= length + 6 and be16(p + pos) == length and bytes_equal(x.name, p + pos + 2, length):
                    t = x.topic
                    base = x.base
                    limit = x.limit
                    pos += 2 + length
                    cursor += 1
                    matched = True
            if not matched:
                c.pos = pos
                if not rd_str(c, e, f_topic, g, False, &start, &length):
                    return False
                pos = c.pos          # past the name, which is p[pos - length : pos]
                # a member owning a subset of its topics skips some: look a little further ahead
                # (last 8 bytes and length first), then hash
                tail = name_tail(p + pos - length, length)
                stop = min(cursor + RESYNC_WINDOW, n_expect)
                for j in range(cursor + 1, stop):
                    x = &expect[j]
                    if x.tail == tail and x.length == length and bytes_equal(x.name, p + pos - length, length):
                        t = x.topic
                        base = x.base
                        limit = x.limit
                        cursor = j + 1
                        matched = True
                        break
                if not matched:
                    t = self.intern_topic(c, e, f_topic, g, start, length)
                    if t < 0:
                        return False
                    base = it.base_of[t]
                    limit = it.limit[t]
            # partitions: an int32 array
            start = pos
            if n - pos < 4:
                fail(e, E_TRUNC32, f_parts, g, pos, n - pos, 0, 0)
                return False
            count = be32(p + pos)
            pos += 4
            if <uint64_t><int64_t>count > <uint64_t>((n - pos) >> 2):   # negative or past the end
                if count < 0:
                    fail(e, E_ARRAY_COUNT, f_parts, g, start, count, 0, 0)
                else:
                    fail(e, E_ARRAY_SIZE, f_parts, g, start, count, <int64_t>count * 4, n - pos)
                return False
            if record:
                if count == 1 and base >= 0:   # the common shape of a large group (one per topic)
                    part = be32(p + pos)
                    if <uint32_t>part < limit:
                        w[0] = <int32_t>(base + part)
                        w += 1
                    else:
                        self.invalid_claim(m, t, part)
                elif base >= 0:
                    for k in range(count):
                        part = be32(p + pos + 4 * k)
                        if <uint32_t>part < limit:
                            w[0] = <int32_t>(base + part)
                            w += 1
                        else:
                            self.invalid_claim(m, t, part)
                else:
                    for k in range(count):
                        part = be32(p + pos + 4 * k)
                        if <uint32_t>part < limit:   # a known topic nobody subscribes to: dropped
                            self.dropped += 1
                        else:
                            self.invalid_claim(m, t, part)
            pos += 4 * <Py_ssize_t>count
        c.pos = pos
        self.owned.size = w - self.owned.data
        return True

    cdef int rest(self, Py_ssize_t m, list member_ids, const uint8_t* p, Py_ssize_t n,
                  Py_ssize_t sub_start, Py_ssize_t sub_end, bint record,
                  int32_t* generation, int32_t* rack_out) except -1:
        cdef Cur c
        cdef Err e
        cdef MemberState* st = &self.state[m]
        cdef int32_t gen_field = -1, length
        cdef Py_ssize_t start, owned_before = self.owned.size
        cdef int64_t dropped_before = self.dropped
        cdef int32_t rack = -1
        cdef bint ok = True
        c.p = p
        c.n = n
        c.pos = st.rest
        vec_reserve(&self.owned, self.owned.size + n // 4)   # a partition takes 4 bytes
        self.prepare_expect(sub_start, sub_end)
        if st.version >= 1:
            ok = self.read_claims(&c, &e, F_OWNED, F_OWNED_TOPIC, F_OWNED_PARTS, m, record and self.mode != MODE_STICKY)
        if ok and st.version >= 2:
            ok = rd_i32(&c, &e, F_GENERATION, 0, &gen_field)
        if ok and st.version >= 3:
            ok = rd_str(&c, &e, F_RACK, 0, True, &start, &length)
            if ok and length > 0:
                rack = self.racks.intern(c.p + c.pos - length, length)
                if rack < 0:
                    fail(&e, E_UTF8, F_RACK, 0, start, start + 2 + self.racks.bad_pos, 0, 0)
                    ok = False
        if ok and st.version <= 3 and c.pos != c.n:
            fail(&e, E_TRAILING, F_END, st.version, c.pos, c.n - c.pos, 0, 0)
            ok = False
        if not ok:
            raise protocol_error(f"member {member_ids[m]!r} subscription", &e)

        if self.mode == MODE_STICKY:
            generation[0] = -1
            if st.ud_len > 0:
                c.p = p + st.ud_at
                c.n = st.ud_len
                c.pos = 0
                if self.read_claims(&c, &e, F_PREV, F_PREV_TOPIC, F_PREV_PARTS, m, record):
                    if c.n - c.pos >= 4:   # v1: the generation follows; v0 ends here
                        generation[0] = be32(c.p + c.pos)
                elif self.strict:
                    raise protocol_error(f"member {member_ids[m]!r} StickyAssignorUserData", &e)
                else:  # Java ignores user data it cannot parse: no claims, unknown generation
                    self.owned.size = owned_before
                    self.dropped = dropped_before
        elif self.mode == MODE_COOPERATIVE and gen_field < 0:
            generation[0] = -1 if st.ud_len < 4 else be32(p + st.ud_at)
        else:
            generation[0] = gen_field
        rack_out[0] = rack + 1
        return self.owned.size > owned_before or self.dropped > dropped_before

    # ---- the call

    def decode(self, list member_ids, list blobs, dict counts, int mode, bint strict):
        """Decode members (already in MemberInfo order); see kafkagroup.protocol.leader.decode_group.
        ``counts`` maps topic name -> partition count (the metadata)."""
        if self.busy:
            raise RuntimeError("GroupDecoder.decode is already running on this decoder")
        if len(member_ids) != len(blobs):
            raise ValueError(f"{len(member_ids)} member ids for {len(blobs)} metadata blobs")
        for m in range(len(blobs)):
            if type(blobs[m]) is not bytes:
                raise TypeError(f"member {member_ids[m]!r}: metadata must be bytes, got {type(blobs[m]).__name__}")
        self.busy = True
        try:
            return self._decode(member_ids, blobs, counts, mode, strict)
        finally:
            self.counts = None
            self.topics.reset()
            self.racks.reset()
            self.prev_bytes = NULL
            vec_trim(&self.sub_ids, self.sub_ids.size)
            vec_trim(&self.owned, self.owned.size)
            vec_trim(&self.final_id, self.final_id.size)
            self.busy = False

    cdef dict _decode(self, list member_ids, list blobs, dict counts, int mode, bint strict):
        cdef Py_ssize_t m_count = len(blobs), m, k, failed_at = m_count
        cdef Err head_err
        cdef bytes blob
        self.mode = mode
        self.strict = strict
        self.counts = counts
        self.topics.reset()
        self.racks.reset()
        self.sub_ids.size = 0
        self.owned.size = 0
        self.prev_bytes = NULL
        self.prev_len = 0
        self.prev_count = -1
        self.prev_sub_start = 0
        self.first_dup = -1
        self.expect_from = -1
        self.bad_member = -1
        self.dropped = 0
        if m_count > self.state_cap:
            self.state = <MemberState*> _realloc_or_raise(self.state, m_count * sizeof(MemberState))
            self.state_cap = m_count

        sub_end_arr = np.empty(m_count, dtype=np.int64)
        cdef cnp.int64_t[::1] sub_end = sub_end_arr
        # phase 1
        for m in range(m_count):
            blob = <bytes> blobs[m]
            if not self.head(m, <const uint8_t*> PyBytes_AS_STRING(blob), PyBytes_GET_SIZE(blob), &head_err):
                failed_at = m
                break
            sub_end[m] = self.sub_ids.size

        cdef _Interner it = self.topics
        cdef Py_ssize_t n_names = it.n, e
        names = it.names
        # the universe: subscribed and in the metadata, numbered in Java String.compareTo order
        universe = []
        unknown = []
        for e in range(n_names):
            if it.subscribed[e]:
                (universe if it.count_of[e] >= 0 else unknown).append(e)
        universe = _by_java_name(names, universe)
        cdef Py_ssize_t n_topics = len(universe)
        partition_count_arr = np.empty(n_topics, dtype=np.int32)
        cdef cnp.int32_t[::1] partition_count = partition_count_arr
        topic_base_arr = np.zeros(n_topics + 1, dtype=np.int64)
        cdef cnp.int64_t[::1] topic_base = topic_base_arr
        vec_reserve(&self.final_id, n_names)
        self.final_id.size = n_names
        cdef int32_t* final_id = self.final_id.data
        for e in range(n_names):
            final_id[e] = -1
        cdef int32_t u
        for k in range(n_topics):
            u = universe[k]
            final_id[u] = <int32_t>k
            it.base_of[u] = topic_base[k]
            partition_count[k] = <int32_t>it.count_of[u]
            topic_base[k + 1] = topic_base[k] + it.count_of[u]

        # phase 2 (members before a phase-1 failure are still checked: their errors come first)
        generation_arr = np.empty(m_count, dtype=np.int32)
        cdef cnp.int32_t[::1] generation = generation_arr
        member_rack_arr = np.empty(m_count, dtype=np.int32)
        cdef cnp.int32_t[::1] member_rack = member_rack_arr
        own_off_arr = np.empty(m_count + 1, dtype=np.int64)
        cdef cnp.int64_t[::1] own_off = own_off_arr
        cdef bint record = failed_at == m_count, any_claims = False, any_generation = False, any_rack = False
        own_off[0] = 0
        for m in range(failed_at):
            blob = <bytes> blobs[m]
            any_claims |= self.rest(m, member_ids, <const uint8_t*> PyBytes_AS_STRING(blob), PyBytes_GET_SIZE(blob),
                                    sub_end[m - 1] if m else 0, sub_end[m], record, &generation[m], &member_rack[m])
            own_off[m + 1] = self.owned.size
            any_generation |= generation[m] != -1
            any_rack |= member_rack[m] != 0
        if failed_at < m_count:
            raise protocol_error(f"member {member_ids[failed_at]!r} subscription", &head_err)

        # Model rules, in the model's order: a topic listed twice, the partition total, invalid claims.
        cdef const int32_t* sub_ids = self.sub_ids.data
        if self.first_dup >= 0:
            m = self.first_dup
            topics = [names[sub_ids[k]] for k in range(sub_end[m - 1] if m else 0, sub_end[m])]
            raise InvalidGroupError(f"member {member_ids[m]!r} lists a topic twice: {topics}")
        if topic_base[n_topics] >= 2 ** 31:
            raise InvalidGroupError(f"{int(topic_base[n_topics])} partitions in total exceed 2^31-1")
        if self.bad_member >= 0:
            count = it.count_of[self.bad_topic]
            what = "an unknown topic" if count < 0 else f"a topic with {count} partitions"
            raise InvalidGroupError(f"member {member_ids[self.bad_member]!r} claims partition "
                                    f"{names[self.bad_topic]}-{self.bad_part} of {what}")

        sub_offsets_arr, sub_topics_arr = self._subscriptions(m_count, sub_end)
        owned_arr = None
        if any_claims:
            owned_arr = np.empty(self.owned.size, dtype=np.int32)
            memcpy(cnp.PyArray_DATA(owned_arr), self.owned.data, self.owned.size * sizeof(int32_t))
        return {
            "topics": [names[x] for x in universe],
            "partition_count": partition_count_arr,
            "topic_base": topic_base_arr,
            "sub_offsets": sub_offsets_arr,
            "sub_topics": sub_topics_arr,
            "owned_offsets": own_off_arr if any_claims else None,
            "owned_partitions": owned_arr,
            "generation": generation_arr if any_generation else None,
            "member_rack": member_rack_arr if any_rack else None,
            "rack_names": list(self.racks.names),
            "unknown_topics": [names[x] for x in _by_java_name(names, unknown)],
            "dropped_claims": int(self.dropped),
        }

    cdef tuple _subscriptions(self, Py_ssize_t m_count, cnp.int64_t[::1] sub_end):
        """Per member, its subscribed topics in wire order, those outside the universe skipped."""
        cdef const int32_t* sub_ids = self.sub_ids.data
        cdef const int32_t* final_id = self.final_id.data
        sub_offsets_arr = np.empty(m_count + 1, dtype=np.int64)
        cdef cnp.int64_t[::1] sub_offsets = sub_offsets_arr
        sub_topics_arr = np.empty(self.sub_ids.size, dtype=np.int32)
        cdef int32_t* out = <int32_t*> cnp.PyArray_DATA(sub_topics_arr)
        cdef Py_ssize_t m, k, o = 0, s0 = 0, s1, ps0 = 0, ps1 = 0
        cdef int32_t f
        sub_offsets[0] = 0
        for m in range(m_count):
            s1 = sub_end[m]
            if (m > 0 and s1 - s0 == ps1 - ps0 and s1 > s0
                    and memcmp(sub_ids + s0, sub_ids + ps0, (s1 - s0) * sizeof(int32_t)) == 0):
                # same ids as the previous member: same output
                memcpy(out + o, out + sub_offsets[m - 1], (sub_offsets[m] - sub_offsets[m - 1]) * sizeof(int32_t))
                o += sub_offsets[m] - sub_offsets[m - 1]
            else:
                for k in range(s0, s1):
                    f = final_id[sub_ids[k]]
                    if f >= 0:
                        out[o] = f
                        o += 1
            sub_offsets[m + 1] = o
            ps0 = s0
            ps1 = s1
            s0 = s1
        if o != self.sub_ids.size:
            sub_topics_arr = sub_topics_arr[:o].copy()
        return sub_offsets_arr, sub_topics_arr

# ---------------------------------------------------------------------------------------------
# encode

cdef inline void _put32(char* w, uint32_t v) noexcept:
    kg_store_be32(w, v)


cdef inline void copy_small(char* dst, const char* src, Py_ssize_t n) noexcept:
    """memcpy for topic-name headers without a libc call: up to 32 bytes as overlapping 8-byte words
    (loads first, then stores), longer ones by memcpy; under 8 bytes, byte by byte."""
    cdef uint64_t a, b, c, d
    cdef Py_ssize_t i
    if n > 32:
        memcpy(dst, src, n)
    elif n >= 16:
        memcpy(&a, src, 8)
        memcpy(&b, src + 8, 8)
        memcpy(&c, src + n - 16, 8)
        memcpy(&d, src + n - 8, 8)
        memcpy(dst, &a, 8)
        memcpy(dst + 8, &b, 8)
        memcpy(dst + n - 16, &c, 8)
        memcpy(dst + n - 8, &d, 8)
    elif n >= 8:
        memcpy(&a, src, 8)
        memcpy(&b, src + n - 8, 8)
        memcpy(dst, &a, 8)
        memcpy(dst + n - 8, &b, 8)
    else:
        for i in range(n):
            dst[i] = src[i]


cdef struct Writer:   # one member's assignment being written
    char* w           # next byte
    char* group_count # where the current topic group's partition count goes
    int32_t topic     # the current group's topic, -1 before the first
    int32_t groups    # first pass: topic groups counted
    int64_t size      # first pass: the exact byte size


def encode_assignments(const int32_t[::1] owner, const int64_t[::1] base, list names, int members,
                       int version, user_data):
    """One ConsumerProtocolAssignment per member from owner[]; see leader.encode_assignments."""
    cdef Py_ssize_t P = owner.shape[0], T = base.shape[0] - 1, p, t, m, p0, p1
    cdef int32_t o
    cdef Py_ssize_t tail, name_len, at
    cdef Writer* wr = NULL
    cdef Writer* x
    cdef char* headers = NULL     # per topic: int16 length + name bytes, concatenated
    cdef Py_ssize_t* header_at = NULL
    cdef const char* header
    cdef Py_ssize_t header_len
    cdef char* w
    if len(names) != T:
        raise ValueError(f"{len(names)} topic names for {T} topics")
    at = 0
    for t in range(T):
        if type(names[t]) is not bytes:
            raise TypeError(f"topic names must be bytes, got {type(names[t]).__name__}")
        if PyBytes_GET_SIZE(names[t]) > 0x7FFF:
            raise ValueError(f"topic name {names[t][:40]!r}... is {PyBytes_GET_SIZE(names[t])} bytes, "
                             f"a Kafka string holds at most 32767")
        at += 2 + PyBytes_GET_SIZE(names[t])
    if user_data is not None and type(user_data) is not bytes:
        raise TypeError(f"user_data must be bytes or None, got {type(user_data).__name__}")
    if members < 0:
        raise ValueError(f"negative member count {members}")
    if T < 0 or base[0] != 0 or base[T] != P:
        raise ValueError(f"topic_base does not span owner[] ({P} partitions)")
    for t in range(T):
        if base[t + 1] < base[t]:
            raise ValueError(f"topic_base decreases at topic {t}")
    tail = 4 + (0 if user_data is None else len(user_data))
    wr = <Writer*> malloc(max(members, 1) * sizeof(Writer))
    headers = <char*> malloc(max(at, 1))
    header_at = <Py_ssize_t*> malloc((T + 1) * sizeof(Py_ssize_t))
    try:
        if wr == NULL or headers == NULL or header_at == NULL:
            raise MemoryError()
        at = 0
        for t in range(T):
            name_len = PyBytes_GET_SIZE(names[t])
            header_at[t] = at
            headers[at] = <char>((name_len >> 8) & 0xFF)
            headers[at + 1] = <char>(name_len & 0xFF)
            memcpy(headers + at + 2, PyBytes_AS_STRING(names[t]), name_len)
            at += 2 + name_len
        header_at[T] = at
        for m in range(members):
            wr[m].topic = -1
            wr[m].size = 2 + 4 + tail
            wr[m].groups = 0
        # Pass 1: validate owner[], size every member's message.
        for t in range(T):
            header_len = header_at[t + 1] - header_at[t]
            p0 = base[t]
            p1 = base[t + 1]
            for p in range(p0, p1):
                o = owner[p]
                if <uint32_t>o + 1u > <uint32_t>members:
                    raise InvariantError(f"owner[{p}] = {o} is not a member index in [-1, {members})")
                if o < 0:
                    continue
                x = &wr[o]
                x.size += 4
                if x.topic != t:
                    x.topic = <int32_t>t
                    x.groups += 1
                    x.size += header_len + 4
        # Allocate exactly; write version, group count and user data.
        out = []
        for m in range(members):
            x = &wr[m]
            blob = PyBytes_FromStringAndSize(NULL, x.size)
            out.append(blob)
            w = PyBytes_AS_STRING(blob)
            w[0] = <char>((version >> 8) & 0xFF)
            w[1] = <char>(version & 0xFF)
            _put32(w + 2, <uint32_t>x.groups)
            if user_data is None:
                _put32(w + x.size - 4, 0xFFFFFFFFu)
            else:
                _put32(w + x.size - tail, <uint32_t>len(user_data))
                memcpy(w + x.size - tail + 4, PyBytes_AS_STRING(user_data), len(user_data))
            x.w = w + 6
            x.topic = -1
        # Pass 2: partitions in id order, so each member's come grouped by topic, ascending. A group's
        # partition count is written when it closes: (bytes written after the count) / 4.
        for t in range(T):
            header = headers + header_at[t]
            header_len = header_at[t + 1] - header_at[t]
            p0 = base[t]
            p1 = base[t + 1]
            for p in range(p0, p1):
                o = owner[p]
                if o < 0:
                    continue
                x = &wr[o]
                w = x.w
                if x.topic != t:
                    if x.topic >= 0:
                        _put32(x.group_count, <uint32_t>((w - x.group_count - 4) >> 2))
                    copy_small(w, header, header_len)
                    x.group_count = w + header_len
                    w += header_len + 4
                    x.topic = <int32_t>t
                _put32(w, <uint32_t>(p - p0))
                x.w = w + 4
        for m in range(members):
            x = &wr[m]
            if x.topic >= 0:
                _put32(x.group_count, <uint32_t>((x.w - x.group_count - 4) >> 2))
        return out
    finally:
        free(wr)
        free(headers)
        free(header_at)
