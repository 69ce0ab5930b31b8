# Interning of byte strings (topic names, racks) to dense ids (pyext/_codec.pyx includes this file;
# it holds the module's cimports).

cdef class _Interner:
    """Distinct byte strings -> dense ids in first-seen order, with their decoded str and, per id, the
    group builder's layout the decoder places claims with (limit, base_of). reset() forgets the
    strings but keeps the memory."""
    cdef const uint8_t** ptrs
    cdef int32_t* lens
    cdef uint64_t* hashes
    cdef uint32_t* limit       # its partition count while it is a topic of the group, else 0
    cdef int64_t* base_of      # group id of its partition 0, -1 = not a topic of the group
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
        free(self.limit)
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
        self.limit = <uint32_t*> _realloc_or_raise(<void*> self.limit, cap * sizeof(uint32_t))
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
        self.limit[e] = 0
        self.base_of[e] = -1
        self.table[slot] = e
        self.n += 1
        self.names.append(name)
        return e

    cdef tuple dictionary(self):
        """The strings in the group builder's layout: (offsets int64[n+1], bytes uint8), as sent."""
        cdef Py_ssize_t i, total = 0
        for i in range(self.n):
            total += self.lens[i]
        offsets_arr = np.empty(self.n + 1, dtype=np.int64)
        cdef cnp.int64_t[::1] offsets = offsets_arr
        data_arr = np.empty(total, dtype=np.uint8)
        cdef uint8_t* data = <uint8_t*> cnp.PyArray_DATA(data_arr)
        offsets[0] = 0
        for i in range(self.n):
            memcpy(data + offsets[i], self.ptrs[i], self.lens[i])
            offsets[i + 1] = offsets[i] + self.lens[i]
        return offsets_arr, data_arr


from cpython.unicode cimport PyUnicode_Check

cdef extern from "Python.h":
    const char* PyUnicode_AsUTF8AndSize(object unicode, Py_ssize_t* size) except NULL


def utf8_strings(list values):
    """kafkagroup.model.utf8_strings at C speed (the leader's member ids): str or None values -> the
    builder's string layout (offsets int64[n+1], UTF-8 bytes uint8, valid uint8[n] or None). A str with
    lone surrogates is encoded with surrogatepass, as model.utf8_strings does."""
    cdef Py_ssize_t n = len(values), i, size, total = 0
    cdef const char* data
    cdef list encoded = [None] * n
    cdef bint any_null = False
    for i in range(n):
        v = values[i]
        if v is None:
            any_null = True
            continue
        if not PyUnicode_Check(v):
            raise TypeError(f"expected str or None, got {v!r}")
        try:
            PyUnicode_AsUTF8AndSize(v, &size)   # cached in the str object; free for ASCII
        except UnicodeEncodeError:
            encoded[i] = (<str> v).encode("utf-8", "surrogatepass")
            size = len(encoded[i])
        total += size
    offsets_arr = np.empty(n + 1, dtype=np.int64)
    cdef cnp.int64_t[::1] offsets = offsets_arr
    data_arr = np.empty(total, dtype=np.uint8)
    cdef char* out = <char*> cnp.PyArray_DATA(data_arr)
    valid_arr = np.ones(n, dtype=np.uint8) if any_null else None
    offsets[0] = 0
    for i in range(n):
        v = values[i]
        size = 0
        if v is None:
            valid_arr[i] = 0
        elif encoded[i] is not None:
            size = PyBytes_GET_SIZE(encoded[i])
            memcpy(out + offsets[i], PyBytes_AS_STRING(encoded[i]), size)
        else:
            data = PyUnicode_AsUTF8AndSize(v, &size)
            memcpy(out + offsets[i], data, size)
        offsets[i + 1] = offsets[i] + size
    return offsets_arr, data_arr, valid_arr
