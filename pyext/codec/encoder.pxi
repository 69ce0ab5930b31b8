# The assignment encoder: owner[] -> one ConsumerProtocolAssignment per member (pyext/_codec.pyx
# includes this file; it holds the module's cimports).
#
# encode_assignments: two passes over owner[] in partition order (topic by topic): the first counts each
# member's partitions, topic groups and name bytes; the second writes every member's exactly-sized bytes
# object in place through one write cursor per member. A topic group starts as a copy of the topic's
# header (length, name, count 1); a group that receives further partitions gets its count written
# when it closes.
#
# Limit: a one-partition group is 10 bytes plus its name, written to one of thousands of interleaved
# streams, so at 1M such groups the pass is bound by memory writes (each member's next cache line is
# prefetched when its group opens), not by instructions.


# How far ahead of a member's write cursor pass 2 prefetches (bytes; a few topic groups).
cdef enum:
    PREFETCH_AHEAD = 128


cdef struct Writer:   # pass 2: one member's assignment being written (24 bytes)
    char* w           # next byte
    char* group_count # where the current topic group's partition count goes
    int32_t topic     # the current group's topic, -1 before the first
    bint several      # the current group holds more than one partition (its count is still 1)


cdef struct Sizing:   # pass 1: one member's message (16 bytes: 2,000 members' fit a 32 KB L1 cache, which
    int32_t topic     # pass 1 reads and writes at random; a 40-byte record of both passes did not)
    int32_t groups    # topic groups counted
    int64_t size      # the exact byte size


def encode_assignments(const int32_t[::1] owner, const int64_t[::1] base, list names, int members,
                       int version, user_data):
    """One ConsumerProtocolAssignment per member from owner[]; see leader.encode_assignments."""
    cdef Py_ssize_t P = owner.shape[0], T = base.shape[0] - 1, p, t, m, p0, p1
    cdef int32_t o
    cdef Py_ssize_t tail, name_len, at
    cdef Writer* wr = NULL
    cdef Writer* x
    cdef Sizing* sz = NULL
    cdef Sizing* y
    cdef char* headers = NULL     # per topic: int16 length, name, int32 count 1; concatenated
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
    try:
        if wr == NULL or sz == NULL or headers == NULL or header_at == NULL:
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
                y = &sz[o]
                y.size += 4
                if y.topic != t:
                    y.topic = <int32_t>t
                    y.groups += 1
                    y.size += header_len
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
            x.several = False
        # Pass 2: partitions in id order, so each member's come grouped by topic, ascending. A group
        # opens with its header's count of 1 (most groups of a large group hold one partition); the
        # count of a group that received more is written when it closes: (bytes after it) / 4.
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
                    if x.several:
                        _put32(x.group_count, <uint32_t>((w - x.group_count - 4) >> 2))
                        x.several = False
                    # Members interleave (a member's next group comes one topic later), so the
                    # hardware sees thousands of write streams and prefetches none: ask for the line
                    # this member writes a few groups from now.
                    kg_prefetch_write(w + PREFETCH_AHEAD)
                    copy_small(w, header, header_len)
                    w += header_len
                    x.group_count = w - 4
                    x.topic = <int32_t>t
                else:
                    x.several = True
                _put32(w, <uint32_t>(p - p0))
                x.w = w + 4
        for m in range(members):
            x = &wr[m]
            if x.several:
                _put32(x.group_count, <uint32_t>((x.w - x.group_count - 4) >> 2))
        return out
    finally:
        free(wr)
        free(sz)
        free(headers)
        free(header_at)
