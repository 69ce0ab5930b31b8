# The group decoder: every member's ConsumerProtocolSubscription -> what the native group builder
# (csrc/kafkagroup/group_builder.hpp, kafkagroup._core.build_groups) needs, and claims placed straight
# as group partition ids (pyext/_codec.pyx includes this file; it holds the module's cimports).
#
# This is a parser only. Kafka's group rules -- MemberInfo order, which topics a group has and their
# Java order, which claims are kept, dropped or refused, topics listed twice, the partition bound,
# rack numbering -- are the builder's; kafkagroup.protocol.leader calls it between the two phases:
#
# - parse_topics (phase 1), members in the order given: version, topic names, user data. Names become interned codes (a dictionary of distinct names). Java members send their
#   topic list sorted, so most members of a group send the same bytes: a member whose topic array
#   (count and bytes) equals the previous member's gets its codes copied after one memcmp; otherwise
#   each name is matched against a hint (the previous member's list at a cursor advanced as in a merge)
#   and, failing that, looked up in an open-addressing table keyed by CPython's seeded hash of the raw
#   bytes; a name is decoded to str (strict UTF-8) once, when first seen.
# - parse_claims (phase 2), after the builder laid out the group's topics: owned partitions or sticky
#   previous_assignment, generation, rack. The builder's layout is a table per code: the partition count
#   while the code is a topic of the group (0 otherwise) and the group id of its partition 0; a claim
#   p < count is written straight as base + p (the builder's own definition of a kept claim), each
#   member's claims then moved to its place in the MemberInfo order the builder gave (members are read
#   in parse order, the order their bytes were received and allocated in: read in MemberInfo order, the
#   pass jumped across the whole metadata), anything else goes to a short list of other claims that the builder classifies (dropped, or refused when
#   strict). Each claim topic is compared, length prefix included, with the member's own subscription
#   entry at a cursor (claims are a sorted subset of the sorted subscription); a group claiming one
#   partition (what every member sends in a large group: one partition of each topic) is recognised by
#   one comparison of its header -- length, name and count 1 -- with a template built per topic.
#
# The decoder keeps its buffers between calls (a group leader decodes every rebalance), so the steady
# state allocates only the arrays it returns. Retained memory is about 4 bytes per subscription entry
# plus 4 bytes per owned partition of the largest recent group; a buffer more than 4x larger than the
# last call needed is freed.
#
# Limits: every count read from the wire is checked against the bytes left (count * smallest element
# size) before it is used, and buffers grow by at most a fixed fraction of each member's byte length,
# so memory stays O(input size). Strings point into the callers' bytes objects, which the decoder holds
# from parse_topics until release(); nothing points into them after that.


cdef enum Mode:  # where owned partitions and generation come from (leader.MODE_*)
    MODE_SUBSCRIPTION = 0
    MODE_STICKY = 1
    MODE_COOPERATIVE = 2


cdef struct MemberState:   # what phase 1 leaves for phase 2, per member
    Py_ssize_t rest        # byte offset after user_data (owned partitions start there)
    Py_ssize_t ud_at       # user_data offset
    int32_t ud_len         # user_data length, -1 = null
    int32_t version        # an int16 on the wire
    bint same_topics       # its topic array is byte for byte the previous member's (so are its ids)

cdef extern from *:
    """
    /* One topic of the current member's subscription, for matching its claims (GroupDecoder.expect). */
    typedef struct {
        const uint8_t* name;
        const uint8_t* single;  /* the claim group [int16 length, name, int32 count = 1] before its partition */
        int64_t base;           /* the interner's base_of (the builder's layout) */
        uint64_t tail;          /* name_tail(name): a cheap first test while scanning */
        int64_t start;          /* bytes of the single-claim groups of the entries before it (from 0) */
        int32_t length;
        int32_t topic;
        uint32_t limit;
        int32_t fast_until;     /* the first entry from this one on whose header is not 16 to 32 bytes */
    } kg_expect;

    #if defined(__SSE2__)
    #include <emmintrin.h>
    #endif

    /* a[0..n) == b[0..n) for 16 <= n <= 32: two overlapping 16-byte compares (SSE2), else a word loop. */
    static inline int kg_equal_16_32(const uint8_t* a, const uint8_t* b, Py_ssize_t n) {
    #if defined(__SSE2__)
        const __m128i e0 = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i*)a), _mm_loadu_si128((const __m128i*)b));
        const __m128i e1 = _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i*)(a + n - 16)),
                                          _mm_loadu_si128((const __m128i*)(b + n - 16)));
        return _mm_movemask_epi8(_mm_and_si128(e0, e1)) == 0xFFFF;
    #else
        uint64_t x[4], y[4];
        memcpy(&x[0], a, 8); memcpy(&x[1], a + 8, 8); memcpy(&x[2], a + n - 16, 8); memcpy(&x[3], a + n - 8, 8);
        memcpy(&y[0], b, 8); memcpy(&y[1], b + 8, 8); memcpy(&y[2], b + n - 16, 8); memcpy(&y[3], b + n - 8, 8);
        return ((x[0] ^ y[0]) | (x[1] ^ y[1]) | (x[2] ^ y[2]) | (x[3] ^ y[3])) == 0;
    #endif
    }

    /* kg_single_claims' loop over at most `left` groups from expect entry x, byte *pos_io; returns the entry
       it stopped at. `checked`: each group's bytes are tested against the end n; a constant at both call sites,
       so two loops are compiled, the unchecked one for a run whose bytes are all there. */
    #if defined(__GNUC__)
    __attribute__((always_inline))
    #endif
    static inline const kg_expect* kg_single_run(const uint8_t* p, Py_ssize_t n, Py_ssize_t* pos_io,
                                                 const kg_expect* x, Py_ssize_t left, int32_t** w_io, int record,
                                                 Py_ssize_t read_ahead, int checked) {
        Py_ssize_t pos = *pos_io;
        int32_t* w = *w_io;
        for (; left > 0; --left, ++x) {
            const Py_ssize_t head = (Py_ssize_t)x->length + 6;
            uint32_t part;
            kg_prefetch_read(p + pos + read_ahead);   /* the member's bytes a few groups ahead */
            if ((checked && n - pos < head + 4) || !kg_equal_16_32(x->single, p + pos, head)) break;
            part = kg_load_be32(p + pos + head);
            if (part >= x->limit) break;   /* limit 0 outside the group's topics */
            *w = (int32_t)(x->base + (int64_t)part);   /* the caller reserved room either way */
            w += record;
            pos += head + 4;
        }
        *pos_io = pos;
        *w_io = w;
        return x;
    }

    /* The run of the common claim shape of a large group (GroupDecoder.read_claims): from byte `pos` of
       p[0..n), groups [int16 length, name, int32 count = 1, int32 partition] on the subscription's topics
       expect[*cursor], expect[*cursor + 1], ... whose header (16 to 32 bytes: names of 10 to 26 bytes)
       equals the topic's template `single` and whose partition is below the topic's limit; each writes
       base + partition at *w (when `record`). Stops at the first group that is not such, after `groups`
       groups in all (*g counts them) or at the end of the subscription; returns the byte offset reached.
       Written in C, not Cython: the Cython loop kept its state in memory and spent ~55 instructions a
       group (1M groups per decode at 1M x 2,000 after a range or round-robin rebalance); this one keeps
       it in registers and compares a header in two 16-byte compares. */
    #if defined(__GNUC__)
    __attribute__((noinline))   /* once per run of claims; inlined, it cost read_claims' other loops registers */
    #endif
    static Py_ssize_t kg_single_claims(const uint8_t* p, Py_ssize_t n, Py_ssize_t pos, const kg_expect* expect,
                                              Py_ssize_t n_expect, Py_ssize_t* cursor_io, int32_t* g_io,
                                              int32_t groups, int32_t** w_io, int record, Py_ssize_t read_ahead) {
        Py_ssize_t cursor = *cursor_io;
        int32_t* w = *w_io;
        /* groups this run may take: one counter instead of three bounds (the subscription's end, the
           claims' count, the first header outside 16..32 bytes, read_claims' general comparison) */
        Py_ssize_t left = n_expect - cursor < (Py_ssize_t)(groups - *g_io) ? n_expect - cursor : groups - *g_io;
        const Py_ssize_t first = cursor;
        const kg_expect* x = expect + cursor;
        if (left <= 0) return pos;
        if (x->fast_until - cursor < left) left = x->fast_until - cursor;
        if (left > 0) {
            const kg_expect* last = x + left - 1;
            /* the bytes of all `left` groups, were each a single claim: when they are there, no group
               needs its own bounds test (each one the loop takes is that long, and it reads nothing
               past its end) */
            const int64_t need = last->start + last->length + 10 - x->start;
            if (n - pos >= need) x = kg_single_run(p, n, &pos, x, left, &w, record, read_ahead, 0);
            else x = kg_single_run(p, n, &pos, x, left, &w, record, read_ahead, 1);
        }
        cursor = x - expect;
        *g_io += (int32_t)(cursor - first);
        *cursor_io = cursor;
        *w_io = w;
        return pos;
    }
    """
    ctypedef struct Expect "kg_expect":   # one topic of the current member's subscription
        const uint8_t* name
        const uint8_t* single
        int64_t base
        uint64_t tail
        int64_t start
        int32_t length
        int32_t topic
        uint32_t limit
        int32_t fast_until
    Py_ssize_t kg_single_claims(const uint8_t* p, Py_ssize_t n, Py_ssize_t pos, const Expect* expect,
                                Py_ssize_t n_expect, Py_ssize_t* cursor_io, int32_t* g_io, int32_t groups,
                                int32_t** w_io, bint record, Py_ssize_t read_ahead) noexcept nogil

# How far past its cursor a claim's topic is looked for in the member's own subscription after a miss
# (owned topics are a sorted subset of the sorted subscription; a longer gap costs a hash lookup).
cdef enum:
    RESYNC_WINDOW = 16

# How far ahead of its cursor read_claims prefetches a member's bytes (a few claim groups).
cdef enum:
    READ_AHEAD = 512


cdef class GroupDecoder:
    """Parses a group's member subscriptions for the native group builder; reusable, not reentrant
    (one group at a time per instance, parse_topics -> parse_claims -> release:
    kafkagroup.protocol.leader keeps a pool).

    Errors keep the single-pass order when both phases run in one order: the first malformed member (a
    phase-1 failure of member f is raised by parse_claims after it has checked the members before f)."""
    cdef _Interner topics
    cdef _Interner racks
    cdef I32Vec sub_ids       # interned topic codes, all members concatenated (wire order)
    cdef I32Vec owned         # group ids of claims placed here, all members concatenated
    cdef I32Vec other_member  # claims left to the builder: member (parse_topics index),
    cdef I32Vec other_code    # topic code,
    cdef I32Vec other_part    # partition
    cdef MemberState* state
    cdef Py_ssize_t state_cap
    cdef Expect* expect             # the current member's subscription, resolved (phase 2)
    cdef Py_ssize_t expect_cap
    cdef Py_ssize_t expect_len
    cdef Py_ssize_t expect_from     # where in sub_ids it was built from, -1 = not built
    cdef uint8_t* singles           # the Expect.single byte strings, concatenated
    cdef Py_ssize_t singles_cap
    cdef int mode
    cdef bint strict
    cdef bint busy
    cdef bint recording             # parse_claims places claims (a layout was given)
    # the previous member's topic array, for the wholesale match
    cdef const uint8_t* prev_bytes
    cdef Py_ssize_t prev_len
    cdef int32_t prev_count
    cdef Py_ssize_t prev_sub_start
    # between parse_topics and release
    cdef list member_ids
    cdef list blobs
    cdef Py_ssize_t failed_at       # first member whose phase 1 failed (= member count: none)
    cdef Err head_err
    cdef object sub_end             # int64[M + 1]: sub_offsets

    def __cinit__(self):
        self.topics = _Interner()
        self.racks = _Interner()

    def __dealloc__(self):
        free(self.sub_ids.data)
        free(self.owned.data)
        free(self.other_member.data)
        free(self.other_code.data)
        free(self.other_part.data)
        free(self.state)
        free(self.expect)
        free(self.singles)

    cdef int32_t intern_topic(self, Cur* c, Err* e, int field, Py_ssize_t idx, Py_ssize_t start,
                              int32_t n) except -2:
        """The slow path: hash lookup, and for a new name UTF-8 decoding."""
        cdef int32_t t = self.topics.intern(c.p + c.pos - n, n)
        if t < 0:
            fail(e, E_UTF8, field, idx, start, start + 2 + self.topics.bad_pos, 0, 0)
            return -1
        return t

    # ---- phase 1: version, topics, user data

    cdef bint read_topics(self, Cur* c, Err* e, int32_t count, bint* same) except -1:
        """The subscription's topic names -> sub_ids (capacity reserved by the caller); ``same`` is set
        when they are the previous member's bytes."""
        cdef _Interner it = self.topics
        cdef const uint8_t* p = c.p
        cdef Py_ssize_t n = c.n, pos = c.pos, first = c.pos, start, cursor = 0, j, stop
        cdef Py_ssize_t prev_count = self.prev_count
        cdef int32_t i, t, hint, length
        cdef int32_t* out = self.sub_ids.data + self.sub_ids.size
        cdef const int32_t* prev = self.sub_ids.data + self.prev_sub_start
        cdef const int32_t* lens = it.lens
        cdef const uint8_t** ptrs = it.ptrs
        # Wholesale: the same count and bytes as the previous member decode to the same codes.
        if (count > 0 and count == prev_count and n - pos >= self.prev_len
                and memcmp(p + pos, self.prev_bytes, self.prev_len) == 0):
            memcpy(out, prev, count * sizeof(int32_t))
            c.pos += self.prev_len
            self.sub_ids.size += count
            same[0] = True
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
                stop = min(cursor + RESYNC_WINDOW, prev_count)
                for j in range(cursor, stop):
                    if prev[j] == t:
                        cursor = j + 1
                        break
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
        if not rd_int(&c, e, 2, F_VERSION, 0, &st.version):
            return False
        if st.version < 0:
            fail(e, E_VERSION, F_VERSION, 0, 0, st.version, 0, 0)
            return False
        if not rd_count(&c, e, F_TOPICS, 0, 2, &count):
            return False
        st.same_topics = False
        if not self.read_topics(&c, e, count, &st.same_topics):
            return False
        if not rd_bytes(&c, e, F_USER_DATA, &st.ud_at, &st.ud_len):
            return False
        st.rest = c.pos
        return True

    # ---- phase 2: owned partitions, generation, rack; sticky user data

    cdef int other_claim(self, Py_ssize_t m, int32_t t, int32_t part) except -1:
        """A claim the builder's layout does not place (not a partition of a topic of the group): the
        builder drops it or, strict, refuses the group."""
        cdef Py_ssize_t k = self.other_code.size
        vec_reserve(&self.other_member, k + 1)
        vec_reserve(&self.other_code, k + 1)
        vec_reserve(&self.other_part, k + 1)
        self.other_member.data[k] = <int32_t>m
        self.other_code.data[k] = t
        self.other_part.data[k] = part
        self.other_member.size = k + 1
        self.other_code.size = k + 1
        self.other_part.size = k + 1
        return 0

    cdef int prepare_expect(self, Py_ssize_t sub_start, Py_ssize_t sub_end, bint same) except -1:
        """Resolve the member's subscription for read_claims, unless it lists the same ids as the
        list resolved last (most members of a group do): known without a comparison when ``same``
        (phase 1 matched its bytes to the previous member's, whose list was resolved last)."""
        cdef Py_ssize_t i, count = sub_end - sub_start, size = 0, fast_until
        cdef int64_t start = 0
        cdef const int32_t* ids = self.sub_ids.data
        cdef _Interner it = self.topics
        cdef Expect* x
        cdef uint8_t* s
        cdef int32_t t
        if same and self.expect_from >= 0:
            return 0
        if (self.expect_from >= 0 and count == self.expect_len
                and memcmp(ids + sub_start, ids + self.expect_from, count * sizeof(int32_t)) == 0):
            return 0
        if count > self.expect_cap:
            self.expect = <Expect*> _realloc_or_raise(self.expect, count * sizeof(Expect))
            self.expect_cap = count
        for i in range(count):
            size += it.lens[ids[sub_start + i]] + 6
        if size > self.singles_cap:
            self.singles = <uint8_t*> _realloc_or_raise(self.singles, size)
            self.singles_cap = size
        s = self.singles
        for i in range(count):
            t = ids[sub_start + i]
            x = &self.expect[i]
            x.single = s
            s[0] = <uint8_t>(it.lens[t] >> 8)
            s[1] = <uint8_t>(it.lens[t] & 0xFF)
            memcpy(s + 2, it.ptrs[t], it.lens[t])
            kg_store_be32(<char*>(s + 2 + it.lens[t]), 1)
            s += it.lens[t] + 6
            x.name = it.ptrs[t]
            x.length = it.lens[t]
            x.topic = t
            x.base = it.base_of[t]
            x.limit = it.limit[t]
            x.tail = name_tail(x.name, x.length)
            x.start = start
            start += it.lens[t] + 10
        fast_until = count
        for i in range(count - 1, -1, -1):
            if not 10 <= self.expect[i].length <= 26:   # headers of 16 to 32 bytes (kg_single_claims)
                fast_until = i
            self.expect[i].fast_until = <int32_t>fast_until
        self.expect_len = count
        self.expect_from = sub_start
        return 0

    cdef bint read_claims(self, Cur* c, Err* e, int f_array, int f_topic, int f_parts,
                          Py_ssize_t m, bint record) except -1:
        """[topic, [int32]] entries (owned partitions or sticky previous_assignment); with ``record``,
        claims the builder's layout places go to ``owned`` as group ids (the caller reserved room for
        every partition the member's bytes can hold, 4 bytes each), the others to other_claim. This is the leader's hottest loop (one iteration per
        owned topic of every member): Java sends claims sorted, a subset of the sorted subscription, so
        each topic is first compared, length prefix included, with the subscription entry at a cursor
        (prepare_expect): in one comparison when the group claims a single partition (length prefix,
        name and count, against Expect.single), and only on a miss parsed field by field and looked up
        by hash."""
        cdef _Interner it = self.topics
        cdef const uint8_t* p = c.p
        cdef Py_ssize_t n = c.n, pos, start, cursor = 0, j, stop, head
        cdef Py_ssize_t n_expect = self.expect_len
        cdef const Expect* expect = self.expect
        cdef const Expect* x
        cdef int32_t groups, count, t, g, k, length, part
        cdef int32_t* w = self.owned.data + self.owned.size
        cdef int32_t* run_w
        cdef Py_ssize_t run_cursor
        cdef int32_t run_g
        cdef int64_t base
        cdef uint32_t limit
        cdef uint64_t tail
        cdef bint matched
        if not rd_count(c, e, f_array, 0, 6, &groups):
            return False
        pos = c.pos
        g = 0
        while True:
            # A run of the common shape of a large group: one valid partition of the next subscribed
            # topic, recognised by one comparison of its header with Expect.single. Anything else
            # (another topic, several partitions, an invalid partition, too few bytes) leaves the run
            # and is parsed field by field below.
            # (headers of 16 to 32 bytes in C, kg_single_claims; other lengths here)
            # (through copies: the addresses of cursor, g and w themselves kept them in memory for the rest
            # of this function, one load and store more per partition in the multi-partition loop below)
            run_cursor = cursor
            run_g = g
            run_w = w
            pos = kg_single_claims(p, n, pos, expect, n_expect, &run_cursor, &run_g, groups, &run_w, record, READ_AHEAD)
            cursor = run_cursor
            g = run_g
            w = run_w
            while g < groups and cursor < n_expect:
                x = &expect[cursor]
                head = x.length + 6
                if 16 <= head <= 32:
                    break
                # the bytes a few groups ahead: the member's blob is read once, straight from memory
                kg_prefetch_read(p + pos + READ_AHEAD)
                if n - pos < head + 4 or not bytes_equal(x.single, p + pos, head):
                    break
                part = be32(p + pos + head)
                if <uint32_t>part >= x.limit:   # limit 0 outside the group's topics
                    break
                if record:
                    w[0] = <int32_t>(x.base + part)
                    w += 1
                pos += head + 4
                cursor += 1
                g += 1
            if g == groups:
                break
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
            if record:   # limit is 0 for a code that is not a topic of the group
                if count == 1:   # the common shape of a large group (one per topic)
                    part = be32(p + pos)
                    if <uint32_t>part < limit:
                        w[0] = <int32_t>(base + part)
                        w += 1
                    else:
                        self.other_claim(m, t, part)
                elif limit > 0:
                    for k in range(count):
                        part = be32(p + pos + 4 * k)
                        w[0] = <int32_t>(base + part)
                        w += <uint32_t>part < limit   # kept, or overwritten by the next write
                        if <uint32_t>part >= limit:
                            self.other_claim(m, t, part)
                else:
                    for k in range(count):
                        self.other_claim(m, t, be32(p + pos + 4 * k))
            pos += 4 * <Py_ssize_t>count
            g += 1
        c.pos = pos
        self.owned.size = w - self.owned.data
        return True

    cdef int rest(self, Py_ssize_t m, list member_ids, const uint8_t* p, Py_ssize_t n,
                  Py_ssize_t sub_start, Py_ssize_t sub_end, bint same, bint record,
                  int32_t* generation, int32_t* rack_out) except -1:
        cdef Cur c
        cdef Err e
        cdef MemberState* st = &self.state[m]
        cdef int32_t gen_field = -1, length
        cdef Py_ssize_t start, owned_before = self.owned.size, others_before = self.other_code.size
        cdef int32_t rack = -1
        cdef bint ok = True
        c.p = p
        c.n = n
        c.pos = st.rest
        vec_reserve(&self.owned, self.owned.size + n // 4)   # a partition takes 4 bytes
        self.prepare_expect(sub_start, sub_end, same)
        if st.version >= 1:
            ok = self.read_claims(&c, &e, F_OWNED, F_OWNED_TOPIC, F_OWNED_PARTS, m, record and self.mode != MODE_STICKY)
        if ok and st.version >= 2:
            ok = rd_int(&c, &e, 4, F_GENERATION, 0, &gen_field)
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
                    self.other_member.size = others_before
                    self.other_code.size = others_before
                    self.other_part.size = others_before
        elif self.mode == MODE_COOPERATIVE and gen_field < 0:
            generation[0] = -1 if st.ud_len < 4 else be32(p + st.ud_at)
        else:
            generation[0] = gen_field
        rack_out[0] = rack
        return self.owned.size > owned_before or self.other_code.size > others_before

    # ---- the calls

    def parse_topics(self, list member_ids, list blobs, int mode, bint strict):
        """Phase 1 over the members (in the order given; ``blobs`` their metadata bytes): returns
        ``names`` (the dictionary of distinct topic names, list of str), ``dictionary`` (the same as
        (offsets int64, UTF-8 bytes uint8), the builder's string layout), ``sub_offsets`` int64[M+1],
        ``sub_codes`` int32 (a view of the decoder's buffer, valid until release()) and ``complete``
        (False when a member's bytes failed: parse_claims raises that error), ``sub_same`` uint8[M] (1
        where a member's topic bytes are the previous member's: the builder's NamedGroups::sub_same). ``mode`` says where
        claims come from (leader.member_data_rule)."""
        cdef Py_ssize_t m_count = len(blobs), m
        cdef bytes blob
        if self.busy:
            raise RuntimeError("GroupDecoder is already decoding a group")
        if len(member_ids) != m_count:
            raise ValueError(f"{len(member_ids)} member ids for {m_count} metadata blobs")
        for m in range(m_count):
            if type(blobs[m]) is not bytes:
                raise TypeError(f"member {member_ids[m]!r}: metadata must be bytes, got {type(blobs[m]).__name__}")
        self.busy = True
        self.member_ids = member_ids
        self.blobs = blobs
        self.mode = mode
        self.strict = strict
        self.topics.reset()
        self.racks.reset()
        self.sub_ids.size = 0
        self.owned.size = 0
        self.other_member.size = 0
        self.other_code.size = 0
        self.other_part.size = 0
        self.prev_bytes = NULL
        self.prev_len = 0
        self.prev_count = -1
        self.prev_sub_start = 0
        self.expect_from = -1
        if m_count > self.state_cap:
            self.state = <MemberState*> _realloc_or_raise(self.state, m_count * sizeof(MemberState))
            self.state_cap = m_count
        sub_end_arr = np.zeros(m_count + 1, dtype=np.int64)
        cdef cnp.int64_t[::1] sub_end = sub_end_arr
        same_arr = np.zeros(m_count, dtype=np.uint8)
        cdef cnp.uint8_t[::1] same = same_arr
        self.failed_at = m_count
        for m in range(m_count):
            blob = <bytes> blobs[m]
            if not self.head(m, <const uint8_t*> PyBytes_AS_STRING(blob), PyBytes_GET_SIZE(blob), &self.head_err):
                self.failed_at = m
                break
            sub_end[m + 1] = self.sub_ids.size
            same[m] = self.state[m].same_topics
        self.sub_end = sub_end_arr
        cdef Py_ssize_t n_sub = self.sub_ids.size
        return {
            "names": list(self.topics.names),
            "dictionary": self.topics.dictionary(),
            "sub_offsets": sub_end_arr,
            "sub_codes": np.asarray(<int32_t[:n_sub]> self.sub_ids.data) if n_sub else np.zeros(0, np.int32),
            "sub_same": same_arr,
            "complete": self.failed_at == m_count,
        }

    def parse_claims(self, partition_count, codes, order=None):
        """Phase 2, after a complete parse_topics (or, to find a malformed member, after any), with the
        builder's layout of the group's topics: ``codes`` int32[T] (the name code of each topic of the
        group, in the group's order) and ``partition_count`` int32[T]; None when the group is refused
        anyway (the bytes are still checked: their errors come first). ``order`` (int64[M], default the
        parse order) is the order the results are laid out in: MemberInfo order; members are read in
        parse order all the same (their bytes' allocation order). Raises the first ProtocolError in
        ``order``. Returns ``owned_offsets`` int64[M+1] and
        ``owned_partitions`` int32 (the claims placed, None when nobody claims anything), ``others``
        (member int64 -- the parse_topics index --, code int32, partition int64 of the claims left to
        the builder, members in parse order, each member's in wire order), ``generation`` int32[M] (None when all -1), ``member_rack``
        int32[M] (-1 none; codes into ``rack_names``, None when nobody has a rack), ``rack_names``,
        ``names`` and ``dictionary`` (phase 2 may add names: claims on topics nobody subscribes to)."""
        if not self.busy or self.blobs is None:
            raise RuntimeError("parse_claims needs parse_topics first")
        cdef _Interner it = self.topics
        cdef Py_ssize_t m_count = len(self.blobs), m, k, n_topics = 0
        cdef int64_t base = 0
        cdef int32_t code
        cdef bint record = codes is not None and self.failed_at == m_count
        cdef cnp.int32_t[::1] code_view
        cdef cnp.int32_t[::1] count_view
        cdef cnp.int64_t[::1] order_view
        cdef cnp.uint8_t[::1] seen
        cdef Py_ssize_t n_run = self.failed_at
        self.recording = record
        if order is not None:
            order_view = np.ascontiguousarray(order, dtype=np.int64)
            if self.failed_at < m_count or order_view.shape[0] != m_count:
                raise ValueError("an order needs a complete parse_topics and one entry per member")
            seen_arr = np.zeros(m_count, dtype=np.uint8)
            seen = seen_arr
            for k in range(m_count):
                if not 0 <= order_view[k] < m_count or seen[order_view[k]]:
                    raise ValueError("order must be a permutation of the members")
                seen[order_view[k]] = 1
        for k in range(it.n):
            it.limit[k] = 0
            it.base_of[k] = -1
        if record:
            code_view = np.ascontiguousarray(codes, dtype=np.int32)
            count_view = np.ascontiguousarray(partition_count, dtype=np.int32)
            n_topics = code_view.shape[0]
            if count_view.shape[0] != n_topics:
                raise ValueError(f"{n_topics} topic codes for {count_view.shape[0]} partition counts")
            for k in range(n_topics):
                code = code_view[k]
                if code < 0 or code >= it.n or count_view[k] < 0 or it.limit[code] != 0:
                    raise ValueError(f"topic code {code} is not a distinct name of this group")
                it.limit[code] = <uint32_t>count_view[k]
                it.base_of[code] = base
                base += count_view[k]
            if base > 2 ** 31 - 1:
                raise ValueError(f"{base} partitions do not fit the group's int32 ids")
        generation_arr = np.empty(m_count, dtype=np.int32)
        cdef cnp.int32_t[::1] generation = generation_arr
        member_rack_arr = np.empty(m_count, dtype=np.int32)
        cdef cnp.int32_t[::1] member_rack = member_rack_arr
        own_off_arr = np.zeros(m_count + 1, dtype=np.int64)
        cdef cnp.int64_t[::1] own_off = own_off_arr
        cdef bint any_claims = False, any_generation = False, any_rack = False
        cdef int32_t* owned_out
        cdef cnp.int64_t[::1] join_off
        cdef Py_ssize_t j
        owned_arr = None
        if order is None:
            any_claims = self.read_members(n_run, None, generation, member_rack, own_off)
            if self.failed_at < m_count:
                raise protocol_error(f"member {self.member_ids[self.failed_at]!r} subscription", &self.head_err)
            if any_claims:
                owned_arr = np.empty(self.owned.size, dtype=np.int32)
                memcpy(cnp.PyArray_DATA(owned_arr), self.owned.data, self.owned.size * sizeof(int32_t))
        else:
            # Read in parse (JoinGroup) order, where the members' bytes were allocated one after another,
            # and lay each member out at its MemberInfo position: read in MemberInfo order, the second
            # pass jumped across the whole metadata (12-32 MB at 1M x 2,000) for every member, at the same
            # instruction count. The copy into MemberInfo order replaces the copy out of the buffer.
            # A member that fails: read again in MemberInfo order, so the first failure in that order is
            # raised (an error path).
            join_gen_arr = np.empty(m_count, dtype=np.int32)
            join_rack_arr = np.empty(m_count, dtype=np.int32)
            join_off_arr = np.zeros(m_count + 1, dtype=np.int64)
            join_off = join_off_arr
            try:
                any_claims = self.read_members(m_count, None, join_gen_arr, join_rack_arr, join_off_arr)
            except ProtocolError:
                self.owned.size = 0
                self.other_member.size = 0
                self.other_code.size = 0
                self.other_part.size = 0
                self.expect_from = -1
                self.read_members(m_count, order_view, generation, member_rack, own_off)
                raise InvariantError("a member failed in parse order but not in MemberInfo order")
            self.place(order_view, join_gen_arr, join_rack_arr, join_off_arr, generation, member_rack, own_off)
            if any_claims:
                owned_arr = np.empty(self.owned.size, dtype=np.int32)
                owned_out = <int32_t*> cnp.PyArray_DATA(owned_arr)
                for k in range(m_count):
                    j = order_view[k]
                    memcpy(owned_out + own_off[k], self.owned.data + join_off[j],
                           (own_off[k + 1] - own_off[k]) * sizeof(int32_t))
        for k in range(n_run):
            any_generation |= generation[k] != -1
            any_rack |= member_rack[k] >= 0
        cdef Py_ssize_t n_other = self.other_code.size
        others = (np.asarray(<int32_t[:n_other]> self.other_member.data).astype(np.int64),
                  np.asarray(<int32_t[:n_other]> self.other_code.data).copy(),
                  np.asarray(<int32_t[:n_other]> self.other_part.data).astype(np.int64)) if n_other else None
        return {
            "owned_offsets": own_off_arr if any_claims else None,
            "owned_partitions": owned_arr,
            "others": others,
            "generation": generation_arr if any_generation else None,
            "member_rack": member_rack_arr if any_rack else None,
            "rack_names": list(self.racks.names),
            "names": list(it.names),
            "dictionary": it.dictionary() if n_other else None,
        }

    cdef bint read_members(self, Py_ssize_t n_run, cnp.int64_t[::1] order, cnp.int32_t[::1] generation,
                           cnp.int32_t[::1] member_rack, cnp.int64_t[::1] own_off) except -1:
        """rest() of the first ``n_run`` members, the k-th read being member order[k] (parse order when
        ``order`` is None); its generation, rack and end of claims in ``owned`` go to row k. True when
        any member claims anything."""
        cdef cnp.int64_t[::1] sub_end = self.sub_end
        cdef bint any_claims = False, same
        cdef bytes blob
        cdef Py_ssize_t k, j, prev = -2
        for k in range(n_run):
            j = k if order is None else order[k]
            blob = <bytes> self.blobs[j]
            # its topic bytes equal those of the member parsed before it, which was read just before
            same = self.state[j].same_topics and prev == j - 1
            any_claims |= self.rest(j, self.member_ids, <const uint8_t*> PyBytes_AS_STRING(blob), PyBytes_GET_SIZE(blob),
                                    sub_end[j], sub_end[j + 1], same, self.recording, &generation[k], &member_rack[k])
            own_off[k + 1] = self.owned.size
            prev = j
        return any_claims

    cdef int place(self, cnp.int64_t[::1] order, cnp.int32_t[::1] join_gen, cnp.int32_t[::1] join_rack,
                   cnp.int64_t[::1] join_off, cnp.int32_t[::1] generation, cnp.int32_t[::1] member_rack,
                   cnp.int64_t[::1] own_off) except -1:
        """Rows read in parse order -> rows in ``order`` (row k is member order[k]); own_off becomes the
        offsets of the members' claims laid out in that order."""
        cdef Py_ssize_t k, j
        for k in range(order.shape[0]):
            j = order[k]
            generation[k] = join_gen[j]
            member_rack[k] = join_rack[j]
            own_off[k + 1] = own_off[k] + join_off[j + 1] - join_off[j]
        return 0

    def release(self):
        """The group is done: drop the callers' bytes and the views of the buffers handed out
        (sub_codes), trim buffers far larger than this group needed; the decoder is free again."""
        self.member_ids = None
        self.blobs = None
        self.sub_end = None
        self.topics.reset()
        self.racks.reset()
        self.prev_bytes = NULL
        vec_trim(&self.sub_ids, self.sub_ids.size)
        vec_trim(&self.owned, self.owned.size)
        vec_trim(&self.other_member, self.other_member.size)
        vec_trim(&self.other_code, self.other_code.size)
        vec_trim(&self.other_part, self.other_part.size)
        self.busy = False
