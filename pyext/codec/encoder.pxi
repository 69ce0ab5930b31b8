# The assignment encoder: owner[] -> one ConsumerProtocolAssignment per member (pyext/_codec.pyx
# includes this file; it holds the module's cimports).
#
# encode_assignments: two passes over owner[] in partition order (topic by topic), both in C below: the
# first checks owner[] and sizes each member's message (partitions, topic groups, header bytes); the
# second writes every member's exactly-sized bytes object in place through one write cursor per member.
# A topic group starts as a copy of the topic's header (length, name, count 1); a group that receives
# further partitions gets its count written when it closes.
#
# Two shapes dominate large groups, and each pass has a loop for each, chosen per topic:
# - every assigned partition of the topic opens a group of its own (range and round-robin when there
#   are at least as many members as partitions per topic -- 1M such groups at 1M x 2,000): a loop with
#   no run or group test;
# - runs of one owner (sticky and cooperative-sticky hand out whole stretches of a topic): a loop that
#   takes a run at a time and writes its partitions in a tight inner loop.
# Pass 1 counts, per topic, the groups opened and the partitions assigned; pass 2 picks the first loop
# for a topic where the two are equal. Pass 1 itself takes runs after a topic that was not all single
# groups (neighbouring topics of a group look alike), one partition at a time otherwise.
#
# Limit: a one-partition group is 10 bytes plus its name, written to one of thousands of interleaved
# streams, so at 1M such groups pass 2 is bound by memory writes (each member's next cache line is
# prefetched when its group opens) as much as by instructions.

cdef extern from *:
    """
    /* How far ahead of a member's write cursor pass 2 prefetches (bytes; a few topic groups). */
    #define KG_PREFETCH_AHEAD 128
    /* The two passes are functions of their own (inlined into the Cython wrapper, they lost their
       registers to its locals: 25 instead of 21 instructions a partition in pass 1); their per-topic
       loops are inlined with constant shape arguments. */
    #if defined(__GNUC__)
    #define KG_NOINLINE __attribute__((noinline))
    #define KG_INLINE static inline __attribute__((always_inline))
    #else
    #define KG_NOINLINE
    #define KG_INLINE static inline
    #endif
    #if defined(__SSE2__)
    #include <emmintrin.h>
    #endif

    /* Pass 1: one member's message being sized (16 bytes: 2,000 members' fit a 32 KB L1 cache, which
       the pass reads and writes at random). */
    typedef struct {
        int64_t size;     /* the exact byte size */
        int32_t topic;    /* the topic of its last partition, -1 before the first */
        int32_t groups;   /* topic groups counted */
    } kg_sizing;

    /* Pass 2: one member's message being written (16 bytes, as kg_sizing). */
    typedef struct {
        char* w;          /* next byte */
        int32_t topic;    /* the current topic group's topic, -1 before the first */
        int32_t run;      /* bytes of partitions in the current group (4 per partition; < 2^31: a group
                             holds at most 2^28 partitions) */
    } kg_writer;

    /* One run (p..q-1, q > p) of member o in topic t, for pass 1. */
    KG_INLINE void
    kg_size_run(kg_sizing* sz, int32_t o, int32_t t, int64_t n, int64_t header_len, int64_t* groups) {
        kg_sizing* y = sz + o;
        const int fresh = y->topic != t;
        y->size += 4 * n + (fresh ? header_len : 0);
        y->groups += fresh;
        y->topic = t;
        *groups += fresh;
    }

    /* Pass 1 over owner[] in partition order (topic by topic): each member's exact size and topic
       groups, and single[t] = 1 when every assigned partition of topic t opens a group of its own.
       Returns -1, or the first p whose owner[p] is neither -1 nor a member index (one unsigned
       comparison tells a member index from everything else). */
    static KG_NOINLINE Py_ssize_t kg_size_members(const int32_t* owner, const int64_t* base, Py_ssize_t topics,
                                      const Py_ssize_t* header_at, kg_sizing* sz, uint32_t members,
                                      uint8_t* single) {
        int runs = 0;   /* take runs in this topic: the previous one was not all single groups */
        for (Py_ssize_t t = 0; t < topics; ++t) {
            const int64_t header_len = header_at[t + 1] - header_at[t];
            const int64_t p1 = base[t + 1];
            int64_t groups = 0, unassigned = 0;
            if (runs) {
                for (int64_t p = base[t], q; p < p1; p = q) {   /* a run of one owner: p..q-1 */
                    const int32_t o = owner[p];
                    for (q = p + 1; q < p1 && owner[q] == o; ++q) {}
                    if ((uint32_t)o >= members) {
                        if (o != -1) return (Py_ssize_t)p;
                        unassigned += q - p;
                        continue;
                    }
                    kg_size_run(sz, o, (int32_t)t, q - p, header_len, &groups);
                }
            } else {
                for (int64_t p = base[t]; p < p1; ++p) {
                    const int32_t o = owner[p];
                    if ((uint32_t)o >= members) {
                        if (o != -1) return (Py_ssize_t)p;
                        ++unassigned;
                        continue;
                    }
                    kg_size_run(sz, o, (int32_t)t, 1, header_len, &groups);
                }
            }
            single[t] = groups == p1 - base[t] - unassigned;
            runs = !single[t];
        }
        return -1;
    }

    /* A group that received more than one partition gets its count written when it closes (its header
       was copied with count 1): the int32 before its partitions. */
    static inline void kg_close_group(char* w, int32_t run) {
        if (run > 4) kg_store_be32(w - run - 4, (uint32_t)run >> 2);
    }

    /* Pass 2 over one topic's partitions p0..p1-1 (owner[] already checked by pass 1): each partition
       goes to its member's write cursor; a member's first partition of the topic opens a group with a
       copy of the topic's header [int16 length, name, int32 count 1]. `cls` and `single` are constants
       at every call site, so each copy compiles to a fixed sequence (the header's length class: 6-7
       bytes as two overlapping 4-byte moves, 8-15 as two 8-byte moves, 16-32 as two 16-byte moves of
       values loaded once per topic, longer ones by memcpy) and each topic gets the loop of its shape
       (`single`: every partition opens a group; else runs of one owner). Members interleave (a member's
       next group comes one topic later), so the hardware sees thousands of write streams and prefetches
       none: a member's cursor asks for the line it writes a few groups from now when a group opens. */
    KG_INLINE void
    kg_write_topic(const int32_t* owner, int64_t p0, int64_t p1, int32_t t, const char* header,
                   Py_ssize_t header_len, kg_writer* wr, int cls, int single) {
        uint64_t a = 0, b = 0;
        uint32_t c = 0, d = 0;
    #if defined(__SSE2__)
        __m128i h0 = _mm_setzero_si128(), h1 = _mm_setzero_si128();
        if (cls == 3) {
            h0 = _mm_loadu_si128((const __m128i*)header);
            h1 = _mm_loadu_si128((const __m128i*)(header + header_len - 16));
        }
    #endif
        if (cls == 2) { memcpy(&a, header, 8); memcpy(&b, header + header_len - 8, 8); }
        if (cls == 1) { memcpy(&c, header, 4); memcpy(&d, header + header_len - 4, 4); }
    #if defined(__SSE2__)
        #define KG_COPY_HEADER(w) do { \
            if (cls == 1) { memcpy((w), &c, 4); memcpy((w) + header_len - 4, &d, 4); } \
            else if (cls == 2) { memcpy((w), &a, 8); memcpy((w) + header_len - 8, &b, 8); } \
            else if (cls == 3) { _mm_storeu_si128((__m128i*)(w), h0); \
                                 _mm_storeu_si128((__m128i*)((w) + header_len - 16), h1); } \
            else memcpy((w), header, header_len); } while (0)
    #else
        #define KG_COPY_HEADER(w) do { \
            if (cls == 1) { memcpy((w), &c, 4); memcpy((w) + header_len - 4, &d, 4); } \
            else if (cls == 2) { memcpy((w), &a, 8); memcpy((w) + header_len - 8, &b, 8); } \
            else memcpy((w), header, header_len); } while (0)
    #endif
        if (single) {
            for (int64_t p = p0; p < p1; ++p) {
                const int32_t o = owner[p];
                if (o < 0) continue;
                kg_writer* x = wr + o;
                char* w = x->w;
                kg_close_group(w, x->run);
                kg_prefetch_write(w + KG_PREFETCH_AHEAD);
                KG_COPY_HEADER(w);
                w += header_len;
                kg_store_be32(w, (uint32_t)(p - p0));
                x->w = w + 4;
                x->topic = t;
                x->run = 4;
            }
        } else {
            for (int64_t p = p0, q; p < p1; p = q) {   /* a run of one owner: p..q-1 */
                const int32_t o = owner[p];
                for (q = p + 1; q < p1 && owner[q] == o; ++q) {}
                if (o < 0) continue;
                kg_writer* x = wr + o;
                char* w = x->w;
                int32_t run = x->run;
                if (x->topic != t) {
                    kg_close_group(w, run);
                    kg_prefetch_write(w + KG_PREFETCH_AHEAD);
                    KG_COPY_HEADER(w);
                    w += header_len;
                    x->topic = t;
                    run = 0;
                }
                for (int64_t k = p; k < q; ++k, w += 4) kg_store_be32(w, (uint32_t)(k - p0));
                x->w = w;
                x->run = run + (int32_t)(4 * (q - p));
            }
        }
        #undef KG_COPY_HEADER
    }

    /* Pass 2 over owner[] in partition order, so each member's partitions come grouped by topic,
       ascending; then every member's last group is closed. */
    static KG_NOINLINE void kg_write_members(const int32_t* owner, const int64_t* base, Py_ssize_t topics,
                                 const char* headers, const Py_ssize_t* header_at, const uint8_t* single,
                                 kg_writer* wr, Py_ssize_t members) {
        for (Py_ssize_t t = 0; t < topics; ++t) {
            const char* h = headers + header_at[t];
            const Py_ssize_t n = header_at[t + 1] - header_at[t];
            const int64_t p0 = base[t], p1 = base[t + 1];
            const int32_t t32 = (int32_t)t;
            if (single[t]) {
                if (n < 8) kg_write_topic(owner, p0, p1, t32, h, n, wr, 1, 1);
                else if (n < 16) kg_write_topic(owner, p0, p1, t32, h, n, wr, 2, 1);
                else if (n <= 32) kg_write_topic(owner, p0, p1, t32, h, n, wr, 3, 1);
                else kg_write_topic(owner, p0, p1, t32, h, n, wr, 4, 1);
            } else {
                if (n < 8) kg_write_topic(owner, p0, p1, t32, h, n, wr, 1, 0);
                else if (n < 16) kg_write_topic(owner, p0, p1, t32, h, n, wr, 2, 0);
                else if (n <= 32) kg_write_topic(owner, p0, p1, t32, h, n, wr, 3, 0);
                else kg_write_topic(owner, p0, p1, t32, h, n, wr, 4, 0);
            }
        }
        for (Py_ssize_t m = 0; m < members; ++m) kg_close_group(wr[m].w, wr[m].run);
    }
    """
    ctypedef struct Sizing "kg_sizing":
        int64_t size
        int32_t topic
        int32_t groups
    ctypedef struct Writer "kg_writer":
        char* w
        int32_t topic
        int32_t run
    Py_ssize_t kg_size_members(const int32_t* owner, const int64_t* base, Py_ssize_t topics,
                               const Py_ssize_t* header_at, Sizing* sz, uint32_t members,
                               uint8_t* single) noexcept nogil
    void kg_write_members(const int32_t* owner, const int64_t* base, Py_ssize_t topics, const char* headers,
                          const Py_ssize_t* header_at, const uint8_t* single, Writer* wr,
                          Py_ssize_t members) noexcept nogil


def encode_assignments(const int32_t[::1] owner, const int64_t[::1] base, list names, int members,
                       int version, user_data):
    """One ConsumerProtocolAssignment per member from owner[]; see leader.encode_assignments."""
    cdef Py_ssize_t P = owner.shape[0], T = base.shape[0] - 1, p, t, m
    cdef const int32_t* owners = &owner[0] if P else NULL
    cdef Py_ssize_t tail, name_len, at
    cdef Writer* wr = NULL
    cdef Writer* x
    cdef Sizing* sz = NULL
    cdef Sizing* y
    cdef char* headers = NULL     # per topic: int16 length, name, int32 count 1; concatenated
    cdef Py_ssize_t* header_at = NULL
    cdef uint8_t* single = NULL   # per topic: every assigned partition opens a group (pass 1 -> pass 2)
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
        at += 2 + PyBytes_GET_SIZE(names[t]) + 4
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
    sz = <Sizing*> malloc(max(members, 1) * sizeof(Sizing))
    headers = <char*> malloc(max(at, 1))
    header_at = <Py_ssize_t*> malloc((T + 1) * sizeof(Py_ssize_t))
    single = <uint8_t*> malloc(max(T, 1))
    try:
        if wr == NULL or sz == NULL or headers == NULL or header_at == NULL or single == NULL:
            raise MemoryError()
        at = 0
        for t in range(T):
            name_len = PyBytes_GET_SIZE(names[t])
            header_at[t] = at
            headers[at] = <char>((name_len >> 8) & 0xFF)
            headers[at + 1] = <char>(name_len & 0xFF)
            memcpy(headers + at + 2, PyBytes_AS_STRING(names[t]), name_len)
            kg_store_be32(headers + at + 2 + name_len, 1)
            at += 2 + name_len + 4
        header_at[T] = at
        for m in range(members):
            sz[m].topic = -1
            sz[m].size = 2 + 4 + tail
            sz[m].groups = 0
        # Pass 1: validate owner[], size every member's message.
        # (both passes touch no Python object but the bytes made here, which nothing else holds yet: the GIL is
        # released for them, ~10 ms at 1M partitions, so a client's heartbeat thread runs meanwhile)
        with nogil:
            p = kg_size_members(owners, &base[0], T, header_at, sz, <uint32_t>members, single)
        if p >= 0:
            raise InvariantError(f"owner[{p}] = {owner[p]} is not a member index in [-1, {members})")
        # Allocate exactly; write version, group count and user data.
        out = []
        for m in range(members):
            x = &wr[m]
            y = &sz[m]
            blob = PyBytes_FromStringAndSize(NULL, y.size)
            out.append(blob)
            w = PyBytes_AS_STRING(blob)
            w[0] = <char>((version >> 8) & 0xFF)
            w[1] = <char>(version & 0xFF)
            _put32(w + 2, <uint32_t>y.groups)
            if user_data is None:
                _put32(w + y.size - 4, 0xFFFFFFFFu)
            else:
                _put32(w + y.size - tail, <uint32_t>len(user_data))
                memcpy(w + y.size - tail + 4, PyBytes_AS_STRING(user_data), len(user_data))
            x.w = w + 6
            x.topic = -1
            x.run = 0
        # Pass 2: partitions in id order, so each member's come grouped by topic, ascending. A group
        # opens with its header's count of 1 (most groups of a large group hold one partition); the
        # count of a group that received more is written when it closes.
        with nogil:
            kg_write_members(owners, &base[0], T, headers, header_at, single, wr, members)
        return out
    finally:
        free(wr)
        free(sz)
        free(headers)
        free(header_at)
        free(single)
