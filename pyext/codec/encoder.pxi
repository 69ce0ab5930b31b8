# The assignment encoder: owner[] -> one ConsumerProtocolAssignment per member (pyext/_codec.pyx
# includes this file; it holds the module's cimports).
#
# encode_assignments: owner[] is transposed first -- a count of each member's partitions (which also
# validates owner[]), then the partition ids scattered into one list per member (a counting sort:
# partition order is kept, so each list is ascending, grouped by topic) -- and then each member's
# message is sized and written on its own, front to back, from its list: a topic group is the topic's
# header (int16 length, name, int32 count) and the group's partitions, its count written when it
# closes.
#
# Why transposed: written straight from owner[] in partition order, each member's bytes grew by one
# topic group at a time, interleaved with every other member's (at 1M partitions x 2,000 members after
# a range or round-robin rebalance, 1M groups of ~20 bytes into 2,000 streams): each group wrote into a
# cache line of its own that had to be read from memory first, and the pass ran at ~8 ms, bound by
# those misses, not by its instructions. The scatter writes 4-byte ids into 2,000 lists whose current
# lines stay in the cache (16 ids a line), and each message is then one sequential write the hardware
# prefetches. Memory: 4 bytes per partition for the lists, freed on return.


cdef extern from *:
    """
    /* counts1[o + 1] += 1 for each owner o of owner[0..P) (slot 0 counts the unassigned); returns the
       first p whose owner is not in [-1, members), or P. */
    static Py_ssize_t kg_count_owners(const int32_t* owner, Py_ssize_t P, int32_t members, int64_t* counts1) {
        /* the current run of one owner is counted in a register: counted in counts1 partition by
           partition, a sticky result's runs made each increment wait for the previous one's store */
        int32_t current = -1;
        int64_t run = 0;
        for (Py_ssize_t p = 0; p < P; ++p) {
            const int32_t o = owner[p];
            if ((uint32_t)o + 1u > (uint32_t)members) return p;
            if (o == current) {
                ++run;
            } else {
                counts1[current + 1] += run;
                current = o;
                run = 1;
            }
        }
        counts1[current + 1] += run;
        return P;
    }

    /* parts[next1[o + 1]++] = p for each p in order: each owner's partitions, ascending, in its slice. A run
       of partitions with one owner (a sticky result: hundreds) is written as one stretch: partition by
       partition, each write waited for the previous one's update of the same next1 slot. */
    static void kg_scatter_owners(const int32_t* owner, Py_ssize_t P, int64_t* next1, int32_t* parts) {
        Py_ssize_t p = 0;
        while (p < P) {
            const int32_t o = owner[p];
            if (p + 1 < P && owner[p + 1] == o) {
                Py_ssize_t q = p + 2;
                int32_t* dst;
                while (q < P && owner[q] == o) ++q;
                dst = parts + next1[o + 1];
                next1[o + 1] += q - p;
                for (; p < q; ++p) *dst++ = (int32_t)p;
                continue;
            }
            parts[next1[o + 1]++] = (int32_t)p;
            ++p;
        }
    }

    /* The topic of partition id `pid` given that it is past topic t's partitions (t = -1 before the
       first): the next topic when it holds pid (a member holding one partition of each topic, or its
       share of consecutive topics), else a binary search over the later topics (empty topics included).
       base[0..T] are the topics' first ids, non-decreasing, base[T] > pid. */
    static inline Py_ssize_t kg_next_topic(const int64_t* base, Py_ssize_t T, Py_ssize_t t, int64_t pid) {
        Py_ssize_t lo = t + 1, hi = T;   /* the answer u in [lo, T): the last with base[u] <= pid */
        if (pid < base[lo + 1]) return lo;
        while (hi - lo > 1) {
            const Py_ssize_t mid = lo + (hi - lo) / 2;
            if (base[mid] <= pid) lo = mid; else hi = mid;
        }
        return lo;
    }

    /* The byte size and topic group count of the message holding ids[0..n) (ascending partition ids);
       header_at[t + 1] - header_at[t] is topic t's header length. */
    static int64_t kg_member_size(const int32_t* ids, int64_t n, const int64_t* base, Py_ssize_t T,
                                  const Py_ssize_t* header_at, int32_t* groups_out) {
        Py_ssize_t t = -1;
        int64_t size = 4 * n, end = 0;
        int32_t groups = 0;
        for (int64_t i = 0; i < n; ++i) {
            const int64_t pid = ids[i];
            if (pid >= end) {
                t = kg_next_topic(base, T, t, pid);
                end = base[t + 1];
                size += header_at[t + 1] - header_at[t];
                ++groups;
            }
        }
        *groups_out = groups;
        return size;
    }

    /* Writes the topic groups of ids[0..n) at w (kg_member_size bytes); returns the end. headers + header_at[t]
       is topic t's header with count 1; a header of 16..32 bytes (names of 10..26) is copied as two
       overlapping 16-byte moves. */
    static char* kg_member_write(const int32_t* ids, int64_t n, const int64_t* base, Py_ssize_t T,
                                 const char* headers, const Py_ssize_t* header_at, char* w) {
        Py_ssize_t t = -1;
        int64_t end = 0, first = 0;
        char* count_at = NULL;
        uint32_t k = 0;
        for (int64_t i = 0; i < n; ++i) {
            const int64_t pid = ids[i];
            if (pid >= end) {
                const char* h;
                Py_ssize_t hl;
                if (count_at != NULL && k != 1) kg_store_be32(count_at, k);
                t = kg_next_topic(base, T, t, pid);
                first = base[t];
                end = base[t + 1];
                h = headers + header_at[t];
                hl = header_at[t + 1] - header_at[t];
                if (hl >= 16 && hl <= 32) {
                    uint64_t a[2], b[2];
                    memcpy(a, h, 16);
                    memcpy(b, h + hl - 16, 16);
                    memcpy(w, a, 16);
                    memcpy(w + hl - 16, b, 16);
                } else {
                    memcpy(w, h, (size_t)hl);
                }
                w += hl;
                count_at = w - 4;
                k = 0;
            }
            kg_store_be32(w, (uint32_t)(pid - first));
            w += 4;
            ++k;
        }
        if (count_at != NULL && k != 1) kg_store_be32(count_at, k);
        return w;
    }
    """
    Py_ssize_t kg_count_owners(const int32_t* owner, Py_ssize_t P, int32_t members, int64_t* counts1) noexcept nogil
    void kg_scatter_owners(const int32_t* owner, Py_ssize_t P, int64_t* next1, int32_t* parts) noexcept nogil
    int64_t kg_member_size(const int32_t* ids, int64_t n, const int64_t* base, Py_ssize_t T,
                           const Py_ssize_t* header_at, int32_t* groups_out) noexcept nogil
    char* kg_member_write(const int32_t* ids, int64_t n, const int64_t* base, Py_ssize_t T,
                          const char* headers, const Py_ssize_t* header_at, char* w) noexcept nogil


def encode_assignments(const int32_t[::1] owner, const int64_t[::1] base, list names, int members,
                       int version, user_data):
    """One ConsumerProtocolAssignment per member from owner[]; see leader.encode_assignments."""
    cdef Py_ssize_t P = owner.shape[0], T = base.shape[0] - 1, p, t, m
    cdef int32_t o, groups
    cdef Py_ssize_t tail, name_len, at
    cdef int64_t* next1 = NULL     # [members + 1]: counts, then each slice's write position
    cdef int64_t* start1 = NULL    # [members + 2]: where each slice starts (slot 0: the unassigned)
    cdef int32_t* parts = NULL     # [P]: partition ids by owner
    cdef char* headers = NULL      # per topic: int16 length, name, int32 count 1; concatenated
    cdef Py_ssize_t* header_at = NULL
    cdef char* w
    cdef char* end
    cdef int64_t size, n
    cdef const int32_t* own
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
    next1 = <int64_t*> calloc(members + 1, sizeof(int64_t))
    start1 = <int64_t*> malloc((members + 2) * sizeof(int64_t))
    parts = <int32_t*> malloc(max(P, 1) * sizeof(int32_t))
    headers = <char*> malloc(max(at, 1))
    header_at = <Py_ssize_t*> malloc((T + 1) * sizeof(Py_ssize_t))
    try:
        if next1 == NULL or start1 == NULL or parts == NULL or headers == NULL or header_at == NULL:
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
        # Transpose: validate and count, then scatter the ids into one slice per member.
        own = &owner[0] if P else NULL
        p = kg_count_owners(own, P, members, next1)
        if p < P:
            o = owner[p]
            raise InvariantError(f"owner[{p}] = {o} is not a member index in [-1, {members})")
        start1[0] = 0
        for m in range(members + 1):
            start1[m + 1] = start1[m] + next1[m]
            next1[m] = start1[m]
        kg_scatter_owners(own, P, next1, parts)
        # Each member's message, sized exactly, then written front to back.
        out = []
        for m in range(members):
            n = start1[m + 2] - start1[m + 1]
            size = 2 + 4 + tail + kg_member_size(parts + start1[m + 1], n, &base[0], T, header_at, &groups)
            blob = PyBytes_FromStringAndSize(NULL, size)
            out.append(blob)
            w = PyBytes_AS_STRING(blob)
            w[0] = <char>((version >> 8) & 0xFF)
            w[1] = <char>(version & 0xFF)
            _put32(w + 2, <uint32_t>groups)
            end = kg_member_write(parts + start1[m + 1], n, &base[0], T, headers, header_at, w + 6)
            if user_data is None:
                _put32(end, 0xFFFFFFFFu)
            else:
                _put32(end, <uint32_t>len(user_data))
                memcpy(end + 4, PyBytes_AS_STRING(user_data), len(user_data))
            if end + tail != w + size:
                raise InvariantError(f"member {m}: wrote {end + tail - w} bytes of a {size}-byte assignment")
        return out
    finally:
        free(next1)
        free(start1)
        free(parts)
        free(headers)
        free(header_at)
