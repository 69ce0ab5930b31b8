# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""kafkagroup._codec: the group leader's hot path between Kafka wire bytes and the engine's arrays.

Called through kafkagroup.protocol.leader (decode_group / encode_assignments), which validates the
arguments, orders the members and documents the rules; its pure-Python twin is the reference this
module must equal, error messages included.

decode_members: one pass over every member's ConsumerProtocolSubscription bytes, reading fields in
place (no Python object per topic occurrence or per partition). Topic names are interned by their
raw bytes: first against a hint (the topic at the same position in the previous member's list, or the
next topic of the member's own subscription for owned partitions -- Java senders sort both, so in a
group with similar subscriptions almost every name is matched by one memcmp), then in an
open-addressing hash table; a name is decoded to str (strict UTF-8) once, when first seen. A second
pass numbers the subscribed topics in Java order and maps claims to global partition ids.

Limits: every count read from the wire is checked against the bytes left (count * smallest element
size) before anything is reserved, so memory stays O(input size). Strings point into the callers'
bytes objects, which the argument list keeps alive for the duration of the call.

encode_assignments: counting sort of owner[] by member (partitions stay ascending, hence grouped by
topic), then one exactly-sized bytes object per member, written in place.
"""
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, realloc
from libc.string cimport memcmp, memcpy
from cpython.bytes cimport PyBytes_AS_STRING, PyBytes_FromStringAndSize, PyBytes_GET_SIZE

import numpy as np
cimport numpy as cnp

from kafkagroup.errors import InvalidGroupError, InvariantError, ProtocolError

cnp.import_array()

# ---------------------------------------------------------------------------------------------
# growable int32 buffer (capacity doubles; only ever reserved for counts already checked against
# the bytes left in a message)

cdef struct I32Vec:
    int32_t* data
    Py_ssize_t size
    Py_ssize_t cap

cdef int vec_reserve(I32Vec* v, Py_ssize_t need) except -1:
    cdef Py_ssize_t cap
    cdef int32_t* grown
    if need <= v.cap:
        return 0
    cap = v.cap * 2 if v.cap else 256
    while cap < need:
        cap *= 2
    grown = <int32_t*> realloc(v.data, cap * sizeof(int32_t))
    if grown == NULL:
        raise MemoryError()
    v.data = grown
    v.cap = cap
    return 0

cdef inline int vec_push(I32Vec* v, int32_t x) except -1:
    if v.size == v.cap:
        vec_reserve(v, v.size + 1)
    v.data[v.size] = x
    v.size += 1
    return 0

# ---------------------------------------------------------------------------------------------
# string interning by raw bytes

cdef inline uint64_t fnv1a(const uint8_t* p, Py_ssize_t n) noexcept nogil:
    cdef uint64_t h = 14695981039346656037ULL
    cdef Py_ssize_t i
    for i in range(n):
        h = (h ^ p[i]) * 1099511628211ULL
    return h


cdef inline bint bytes_equal(const uint8_t* a, const uint8_t* b, Py_ssize_t n) noexcept nogil:
    """Equality of two short byte strings without a libc call (topic names are mostly 8-40 bytes):
    two overlapping 8-byte words cover 8..16 bytes; longer names fall back to memcmp."""
    cdef uint64_t x, y, u, v
    cdef Py_ssize_t i
    if n >= 8:
        memcpy(&x, a, 8)
        memcpy(&y, b, 8)
        memcpy(&u, a + n - 8, 8)
        memcpy(&v, b + n - 8, 8)
        if x != y or u != v:
            return False
        return n <= 16 or memcmp(a + 8, b + 8, n - 16) == 0
    for i in range(n):
        if a[i] != b[i]:
            return False
    return True


cdef class _Interner:
    """Distinct byte strings -> dense ids in first-seen order, with their decoded str."""
    cdef const uint8_t** ptrs
    cdef int32_t* lens
    cdef uint64_t* hashes
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
        self.ptrs = NULL
        self.lens = NULL
        self.hashes = NULL
        self.table = NULL

    def __dealloc__(self):
        free(self.ptrs)
        free(self.lens)
        free(self.hashes)
        free(self.table)

    cdef int _grow_table(self) except -1:
        cdef Py_ssize_t size = (self.mask + 1) * 2 if self.mask else 1024
        cdef int32_t* table = <int32_t*> realloc(self.table, size * sizeof(int32_t))
        cdef Py_ssize_t i, slot
        if table == NULL:
            raise MemoryError()
        self.table = table
        self.mask = size - 1
        for i in range(size):
            table[i] = -1
        for i in range(self.n):
            slot = <Py_ssize_t>(self.hashes[i] & <uint64_t>self.mask)
            while table[slot] >= 0:
                slot = (slot + 1) & self.mask
            table[slot] = <int32_t>i
        return 0

    cdef inline bint same(self, int32_t e, const uint8_t* p, int32_t n) noexcept:
        return e >= 0 and self.lens[e] == n and bytes_equal(self.ptrs[e], p, n)

    cdef int32_t intern(self, const uint8_t* p, int32_t n, int32_t hint) except -2:
        """Id of the string, adding it if new; -1 when it is new and not valid UTF-8 (bad_pos set)."""
        cdef uint64_t h
        cdef Py_ssize_t slot, cap
        cdef int32_t e
        if hint >= 0 and hint < self.n and self.same(hint, p, n):
            return hint
        if (self.n + 1) * 2 > self.mask + 1:
            self._grow_table()
        h = fnv1a(p, n)
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
            cap = self.cap * 2 if self.cap else 256
            self.ptrs = <const uint8_t**> _realloc_or_raise(<void*> self.ptrs, cap * sizeof(void*))
            self.lens = <int32_t*> _realloc_or_raise(<void*> self.lens, cap * sizeof(int32_t))
            self.hashes = <uint64_t*> _realloc_or_raise(<void*> self.hashes, cap * sizeof(uint64_t))
            self.cap = cap
        e = <int32_t> self.n
        self.ptrs[e] = p
        self.lens[e] = n
        self.hashes[e] = h
        self.table[slot] = e
        self.n += 1
        self.names.append(name)
        return e


cdef void* _realloc_or_raise(void* p, size_t size) except NULL:
    cdef void* grown = realloc(p, size)
    if grown == NULL:
        raise MemoryError()
    return grown

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

cdef inline int32_t be32(const uint8_t* p) noexcept:
    return <int32_t>((<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | <uint32_t>p[3])

cdef inline bint rd_i16(Cur* c, Err* e, int field, Py_ssize_t idx, int16_t* out) noexcept:
    if c.n - c.pos < 2:
        fail(e, E_TRUNC16, field, idx, c.pos, c.n - c.pos, 0, 0)
        return False
    out[0] = <int16_t>((<uint32_t>c.p[c.pos] << 8) | c.p[c.pos + 1])
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


cdef class _Decoder:
    cdef _Interner topics
    cdef _Interner racks
    cdef I32Vec sub_ids       # interned topic ids, all members concatenated (wire order)
    cdef I32Vec claim_topic   # claims: interned topic id ...
    cdef I32Vec claim_part    # ... and partition
    cdef I32Vec subscribed    # per interned topic: 1 when some member subscribes to it
    cdef bint any_claims
    cdef bint strict
    cdef int mode

    def __cinit__(self):
        self.topics = _Interner()
        self.racks = _Interner()

    def __dealloc__(self):
        free(self.sub_ids.data)
        free(self.claim_topic.data)
        free(self.claim_part.data)
        free(self.subscribed.data)

    cdef int32_t intern_topic(self, Cur* c, Err* e, int field, Py_ssize_t idx, Py_ssize_t start,
                              int32_t n, int32_t hint) except -2:
        cdef const uint8_t* p = c.p + c.pos - n
        cdef int32_t t
        if hint >= 0 and self.topics.same(hint, p, n):  # the common case: one compare, no hashing
            return hint
        t = self.topics.intern(p, n, -1)
        if t < 0:
            fail(e, E_UTF8, field, idx, start, start + 2 + self.topics.bad_pos, 0, 0)
            return -1
        while self.subscribed.size < self.topics.n:
            vec_push(&self.subscribed, 0)
        return t

    cdef bint read_claims(self, Cur* c, Err* e, int f_array, int f_topic, int f_parts,
                          Py_ssize_t sub_start, Py_ssize_t sub_len, bint record) except -1:
        """[topic, [int32]] entries (owned partitions or sticky previous_assignment)."""
        cdef int32_t groups, count, t, hint, g, k
        cdef Py_ssize_t start, cursor = 0
        cdef int32_t n
        if not rd_count(c, e, f_array, 0, 6, &groups):
            return False
        for g in range(groups):
            if not rd_str(c, e, f_topic, g, False, &start, &n):
                return False
            hint = self.sub_ids.data[sub_start + cursor] if cursor < sub_len else -1
            t = self.intern_topic(c, e, f_topic, g, start, n, hint)
            if t < 0:
                return False
            if t == hint:
                cursor += 1
            if not rd_count(c, e, f_parts, g, 4, &count):
                return False
            if record and count > 0:
                vec_reserve(&self.claim_topic, self.claim_topic.size + count)
                vec_reserve(&self.claim_part, self.claim_part.size + count)
                for k in range(count):
                    self.claim_topic.data[self.claim_topic.size + k] = t
                    self.claim_part.data[self.claim_part.size + k] = be32(c.p + c.pos + 4 * k)
                self.claim_topic.size += count
                self.claim_part.size += count
            c.pos += 4 * <Py_ssize_t>count
        return True

    cdef int member(self, str member_id, bytes blob, Py_ssize_t prev_start, Py_ssize_t prev_len,
                    int32_t* generation, object racks_out) except -1:
        cdef Cur c
        cdef Err e
        cdef int16_t version
        cdef int32_t count, i, n, t, gen_field = -1, ud_len, hint
        cdef Py_ssize_t start, ud_at, sub_start = self.sub_ids.size, claims_start
        cdef int32_t rack = -1
        cdef bint record_owned = self.mode != MODE_STICKY
        c.p = <const uint8_t*> PyBytes_AS_STRING(blob)
        c.n = PyBytes_GET_SIZE(blob)
        c.pos = 0
        ok = rd_i16(&c, &e, F_VERSION, 0, &version)
        if ok and version < 0:
            fail(&e, E_VERSION, F_VERSION, 0, 0, version, 0, 0)
            ok = False
        if ok:
            ok = rd_count(&c, &e, F_TOPICS, 0, 2, &count)
        if ok:
            vec_reserve(&self.sub_ids, self.sub_ids.size + count)
            for i in range(count):
                if not rd_str(&c, &e, F_TOPIC_I, i, False, &start, &n):
                    ok = False
                    break
                hint = self.sub_ids.data[prev_start + i] if i < prev_len else -1
                t = self.intern_topic(&c, &e, F_TOPIC_I, i, start, n, hint)
                if t < 0:
                    ok = False
                    break
                self.sub_ids.data[self.sub_ids.size] = t
                self.sub_ids.size += 1
                self.subscribed.data[t] = 1
        if ok:
            ok = rd_bytes(&c, &e, F_USER_DATA, &ud_at, &ud_len)
        claims_start = self.claim_topic.size
        if ok and version >= 1:
            ok = self.read_claims(&c, &e, F_OWNED, F_OWNED_TOPIC, F_OWNED_PARTS, sub_start,
                                  self.sub_ids.size - sub_start, record_owned)
        if ok and version >= 2:
            ok = rd_i32(&c, &e, F_GENERATION, 0, &gen_field)
        if ok and version >= 3:
            ok = rd_str(&c, &e, F_RACK, 0, True, &start, &n)
            if ok and n > 0:
                rack = self.racks.intern(c.p + c.pos - n, n, -1)
                if rack < 0:
                    fail(&e, E_UTF8, F_RACK, 0, start, start + 2 + self.racks.bad_pos, 0, 0)
                    ok = False
        if ok and version <= 3 and c.pos != c.n:
            fail(&e, E_TRAILING, F_END, version, c.pos, c.n - c.pos, 0, 0)
            ok = False
        if not ok:
            raise protocol_error(f"member {member_id!r} subscription", &e)

        if self.mode == MODE_STICKY:
            generation[0] = -1
            if ud_len > 0:
                c.p = c.p + ud_at
                c.n = ud_len
                c.pos = 0
                if self.read_claims(&c, &e, F_PREV, F_PREV_TOPIC, F_PREV_PARTS, sub_start,
                                    self.sub_ids.size - sub_start, True):
                    if c.n - c.pos >= 4:   # v1: the generation follows; v0 ends here
                        generation[0] = be32(c.p + c.pos)
                elif self.strict:
                    raise protocol_error(f"member {member_id!r} StickyAssignorUserData", &e)
                else:  # Java ignores user data it cannot parse: no claims, unknown generation
                    self.claim_topic.size = claims_start
                    self.claim_part.size = claims_start
        elif self.mode == MODE_COOPERATIVE and gen_field < 0:
            generation[0] = -1 if ud_len < 4 else be32(c.p + ud_at)
        else:
            generation[0] = gen_field
        if self.claim_topic.size > claims_start:
            self.any_claims = True
        racks_out.append(None if rack < 0 else self.racks.names[rack])
        return 0


def _java_key(str s):
    return s.encode("utf-16-be", "surrogatepass")


def _by_java_name(list names, list ids):
    """ids sorted by Java String.compareTo of their names."""
    return sorted(ids, key=[_java_key(n) for n in names].__getitem__)


def decode_members(list member_ids, list blobs, dict counts, int mode, bint strict):
    """Decode members (already in MemberInfo order); see kafkagroup.protocol.leader.decode_group."""
    cdef Py_ssize_t m_count = len(blobs), m, k, s0, s1, prev_start = 0, prev_len = 0
    cdef _Decoder d = _Decoder()
    sub_end_arr = np.zeros(m_count, dtype=np.int64)
    cdef cnp.int64_t[::1] sub_end = sub_end_arr
    claim_end_arr = np.zeros(m_count, dtype=np.int64)
    cdef cnp.int64_t[::1] claim_end = claim_end_arr
    generation_arr = np.empty(m_count, dtype=np.int32)
    cdef cnp.int32_t[::1] generation = generation_arr
    cdef int32_t gen
    d.mode = mode
    d.strict = strict
    member_racks = []

    for m in range(m_count):
        blob = blobs[m]
        if type(blob) is not bytes:
            raise TypeError(f"member {member_ids[m]!r}: metadata must be bytes, got {type(blob).__name__}")
        s0 = d.sub_ids.size
        d.member(member_ids[m], blob, prev_start, prev_len, &gen, member_racks)
        generation[m] = gen
        prev_start = s0              # the next member's hints: this member's topics, position by position
        prev_len = d.sub_ids.size - s0
        sub_end[m] = d.sub_ids.size
        claim_end[m] = d.claim_topic.size

    names = d.topics.names
    cdef Py_ssize_t n_names = len(names), e
    cdef int32_t* sub_ids = d.sub_ids.data

    # Model rule: a member listing a topic twice is rejected (checked for every member first).
    seen_arr = np.full(max(n_names, 1), -1, dtype=np.int64)
    cdef cnp.int64_t[::1] seen = seen_arr
    s0 = 0
    for m in range(m_count):
        s1 = sub_end[m]
        for k in range(s0, s1):
            if seen[sub_ids[k]] == m:
                topics = [names[sub_ids[j]] for j in range(s0, s1)]
                raise InvalidGroupError(f"member {member_ids[m]!r} lists a topic twice: {topics}")
            seen[sub_ids[k]] = m
        s0 = s1

    # Topic universe: subscribed and in the metadata, numbered in Java String.compareTo order.
    final_id_arr = np.full(max(n_names, 1), -1, dtype=np.int32)
    cdef cnp.int32_t[::1] final_id = final_id_arr
    count_of_arr = np.full(max(n_names, 1), -1, dtype=np.int64)
    cdef cnp.int64_t[::1] count_of = count_of_arr
    universe = []
    unknown = []
    for e in range(n_names):
        c = counts.get(names[e])
        if c is not None:
            count_of[e] = c
        if d.subscribed.data[e]:
            (universe if c is not None else unknown).append(e)
    universe = _by_java_name(names, universe)
    unknown_topics = [names[x] for x in _by_java_name(names, unknown)]
    cdef Py_ssize_t n_topics = len(universe)
    partition_count = np.empty(n_topics, dtype=np.int32)
    topic_base_arr = np.zeros(n_topics + 1, dtype=np.int64)
    cdef cnp.int64_t[::1] topic_base = topic_base_arr
    for k in range(n_topics):
        final_id[universe[k]] = k
        partition_count[k] = count_of[universe[k]]
        topic_base[k + 1] = topic_base[k] + count_of[universe[k]]
    if topic_base[n_topics] >= 2 ** 31:
        raise InvalidGroupError(f"{int(topic_base[n_topics])} partitions in total exceed 2^31-1")

    # Subscriptions: wire order, topics outside the universe skipped.
    sub_offsets_arr = np.zeros(m_count + 1, dtype=np.int64)
    cdef cnp.int64_t[::1] sub_offsets = sub_offsets_arr
    sub_topics_arr = np.empty(d.sub_ids.size, dtype=np.int32)
    cdef cnp.int32_t[::1] sub_topics = sub_topics_arr
    cdef Py_ssize_t out = 0
    cdef int32_t f
    s0 = 0
    for m in range(m_count):
        for k in range(s0, sub_end[m]):
            f = final_id[sub_ids[k]]
            if f >= 0:
                sub_topics[out] = f
                out += 1
        sub_offsets[m + 1] = out
        s0 = sub_end[m]
    sub_topics_arr = sub_topics_arr[:out].copy()

    # Claims -> global partition ids (model rules: unknown / out of range -> strict error or drop;
    # topic nobody subscribes to -> drop).
    owned_offsets = None
    owned_partitions = None
    cdef int64_t dropped = 0, cnt
    cdef int32_t part
    cdef cnp.int64_t[::1] own_off
    cdef cnp.int32_t[::1] own
    if d.any_claims:
        own_off_arr = np.zeros(m_count + 1, dtype=np.int64)
        own_arr = np.empty(d.claim_topic.size, dtype=np.int32)
        own_off = own_off_arr
        own = own_arr
        out = 0
        s0 = 0
        for m in range(m_count):
            for k in range(s0, claim_end[m]):
                e = d.claim_topic.data[k]
                part = d.claim_part.data[k]
                cnt = count_of[e]
                if cnt < 0 or part < 0 or part >= cnt:
                    if strict:
                        what = "an unknown topic" if cnt < 0 else f"a topic with {cnt} partitions"
                        raise InvalidGroupError(
                            f"member {member_ids[m]!r} claims partition {names[e]}-{part} of {what}")
                    dropped += 1
                elif final_id[e] < 0:
                    dropped += 1
                else:
                    own[out] = <int32_t>(topic_base[final_id[e]] + part)
                    out += 1
            own_off[m + 1] = out
            s0 = claim_end[m]
        owned_offsets = own_off_arr
        owned_partitions = own_arr[:out].copy()

    return {
        "topics": [names[x] for x in universe],
        "partition_count": partition_count,
        "topic_base": topic_base_arr,
        "sub_offsets": sub_offsets_arr,
        "sub_topics": sub_topics_arr,
        "owned_offsets": owned_offsets,
        "owned_partitions": owned_partitions,
        "generation": generation_arr if (generation_arr != -1).any() else None,
        "member_racks": member_racks,
        "unknown_topics": unknown_topics,
        "dropped_claims": int(dropped),
    }

# ---------------------------------------------------------------------------------------------
# encode

def encode_assignments(const int32_t[::1] owner, const int64_t[::1] base, list names, int members,
                       int version, user_data):
    """One ConsumerProtocolAssignment per member from owner[]; see leader.encode_assignments."""
    cdef Py_ssize_t P = owner.shape[0], T = base.shape[0] - 1, p, t, k, m
    cdef int32_t o
    start_arr = np.zeros(members + 1, dtype=np.int64)
    cdef cnp.int64_t[::1] start = start_arr
    for p in range(P):
        o = owner[p]
        if o < -1 or o >= members:
            raise InvariantError(f"owner[{p}] = {o} is not a member index in [-1, {members})")
        start[o + 1] += 1
    start[0] = 0
    for m in range(members):
        start[m + 1] += start[m]
    fill_arr = start[:members].copy()
    cdef cnp.int64_t[::1] fill = fill_arr
    order_arr = np.empty(max(start[members], 1), dtype=np.int32)
    cdef cnp.int32_t[::1] order = order_arr
    topic_of_arr = np.empty(max(P, 1), dtype=np.int32)
    cdef cnp.int32_t[::1] topic_of = topic_of_arr
    for t in range(T):
        for p in range(base[t], base[t + 1]):
            topic_of[p] = <int32_t>t
    for p in range(P):
        o = owner[p]
        if o >= 0:
            order[fill[o]] = <int32_t>p
            fill[o] += 1

    cdef list name_list = names
    cdef Py_ssize_t tail = 4 + (0 if user_data is None else len(user_data))
    name_len_arr = np.empty(max(T, 1), dtype=np.int64)
    cdef cnp.int64_t[::1] name_len = name_len_arr
    for t in range(T):
        name_len[t] = PyBytes_GET_SIZE(name_list[t])
    cdef Py_ssize_t size, groups, a, b, at, group_at
    cdef int32_t prev, tt, in_group
    cdef char* w
    cdef const char* nm
    cdef uint32_t v
    out = []
    for m in range(members):
        a = start[m]
        b = start[m + 1]
        size = 2 + 4 + tail + 4 * (b - a)
        groups = 0
        prev = -1
        for k in range(a, b):
            tt = topic_of[order[k]]
            if tt != prev:
                groups += 1
                size += 2 + name_len[tt] + 4
                prev = tt
        blob = PyBytes_FromStringAndSize(NULL, size)
        w = PyBytes_AS_STRING(blob)
        w[0] = <char>((version >> 8) & 0xFF)
        w[1] = <char>(version & 0xFF)
        _put32(w + 2, <uint32_t>groups)
        at = 6
        prev = -1
        group_at = 0
        in_group = 0
        for k in range(a, b):
            p = order[k]
            tt = topic_of[p]
            if tt != prev:
                if prev >= 0:
                    _put32(w + group_at, <uint32_t>in_group)
                nm = PyBytes_AS_STRING(name_list[tt])
                w[at] = <char>((name_len[tt] >> 8) & 0xFF)
                w[at + 1] = <char>(name_len[tt] & 0xFF)
                memcpy(w + at + 2, nm, name_len[tt])
                at += 2 + name_len[tt]
                group_at = at
                at += 4
                in_group = 0
                prev = tt
            _put32(w + at, <uint32_t>(p - base[tt]))
            at += 4
            in_group += 1
        if prev >= 0:
            _put32(w + group_at, <uint32_t>in_group)
        if user_data is None:
            _put32(w + at, 0xFFFFFFFFu)
        else:
            _put32(w + at, <uint32_t>len(user_data))
            memcpy(w + at + 4, PyBytes_AS_STRING(user_data), len(user_data))
        out.append(blob)
    return out


cdef inline void _put32(char* w, uint32_t v) noexcept:
    w[0] = <char>((v >> 24) & 0xFF)
    w[1] = <char>((v >> 16) & 0xFF)
    w[2] = <char>((v >> 8) & 0xFF)
    w[3] = <char>(v & 0xFF)
