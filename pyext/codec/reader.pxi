# Reading the fields of one message: bounds-checked int16/int32/string/bytes/array-count reads; a
# failure fills an Err and the caller raises one ProtocolError worded as the pure-Python reader's
# (pyext/_codec.pyx includes this file; it holds the module's cimports).

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

cdef inline bint rd_int(Cur* c, Err* e, Py_ssize_t width, int field, Py_ssize_t idx, int32_t* out) noexcept:
    """A big-endian int16 (width 2, sign-extended) or int32 (width 4) field."""
    if c.n - c.pos < width:
        fail(e, E_TRUNC16 if width == 2 else E_TRUNC32, field, idx, c.pos, c.n - c.pos, 0, 0)
        return False
    out[0] = be16(c.p + c.pos) if width == 2 else be32(c.p + c.pos)
    c.pos += width
    return True

cdef inline bint rd_str(Cur* c, Err* e, int field, Py_ssize_t idx, bint nullable,
                        Py_ssize_t* start, int32_t* length) noexcept:
    """String field: on success c.pos is past it and the bytes are c.p[c.pos - length : c.pos]."""
    cdef int32_t n
    start[0] = c.pos
    if not rd_int(c, e, 2, field, idx, &n):
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
    if not rd_int(c, e, 4, field, 0, &n):
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
    if not rd_int(c, e, 4, field, idx, &n):
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


_PROBLEM_TEXT = {   # a, b, c: the values Err quotes
    E_TRUNC16: "truncated: int16 needs 2 bytes, {a} left",
    E_TRUNC32: "truncated: int32 needs 4 bytes, {a} left",
    E_STR_LEN: "invalid string length {a}",
    E_STR_EXCEEDS: "string length {a} exceeds the {b} bytes left",
    E_UTF8: "invalid UTF-8 at byte {a}",
    E_BYTES_LEN: "invalid bytes length {a}",
    E_BYTES_EXCEEDS: "bytes length {a} exceeds the {b} bytes left",
    E_ARRAY_COUNT: "invalid array count {a}",
    E_ARRAY_SIZE: "array count {a} needs at least {b} bytes, {c} left",
    E_TRAILING: "{a} unexpected trailing bytes",
    E_VERSION: "unsupported version {a}",
}


cdef object protocol_error(str what, Err* e):
    """The ProtocolError the pure-Python Reader raises for the same failure (same words)."""
    field = _FIELD_NAMES[e.field].format(e.index)
    problem = _PROBLEM_TEXT[e.problem].format(a=e.a, b=e.b, c=e.c)
    return ProtocolError(f"{what}: {field} at byte offset {e.offset}: {problem}")
