# Included by pyext/_members.pyx and pyext/_claims.pyx (Cython `include` is textual: one source, a copy of the
# class in each module). Needs: calloc / malloc / free (libc.stdlib), memcpy (libc.string), uintptr_t / int32_t
# (libc.stdint), PyObject, numpy's cimport as cnp, PyDict_Next(object, Py_ssize_t*, PyObject**, PyObject**).

cdef enum:
    ABSENT = -2147483648   # find()'s answer for an address never put (values put are >= -1)


cdef class _ByAddress:
    """str object address -> code, open addressing (linear probing, power-of-two size, at most half full).
    The names in members' lists are mostly the very objects of the metadata or of one another, so a
    lookup by address (a few ns) replaces most dict lookups (hash + compare). Valid for one call:
    addresses are borrowed from lists the caller keeps alive. Where user code can run during the call (a str
    subclass's __eq__ / __hash__, an item's __index__) it can drop the last reference to a str put here, and a
    new str made at the same address would be found with the old one's value: hold() makes the table keep a
    reference to every key put from then on (and to those already put, which are alive when it is called)."""
    cdef uintptr_t* keys
    cdef int32_t* values
    cdef size_t mask, used
    cdef list held    # None, or the objects put since hold() (kept alive with the table)

    def __cinit__(self):
        self.mask = 63     # (grows as needed: most calls see a few dozen names)
        self.used = 0
        self.keys = <uintptr_t*>calloc(self.mask + 1, sizeof(uintptr_t))
        self.values = <int32_t*>calloc(self.mask + 1, sizeof(int32_t))
        if self.keys is NULL or self.values is NULL:
            raise MemoryError()

    def __dealloc__(self):
        free(self.keys)
        free(self.values)

    cdef int seed(self, object kept) except -1:
        """Start from a table address_table() laid out (None: empty). Its addresses must name objects alive
        for the call (kafkagroup.model keeps them with the metadata they come from)."""
        cdef const uintptr_t* keys
        cdef const int32_t* values
        cdef size_t size, i
        cdef cnp.ndarray kept_keys, kept_values
        if kept is None:
            return 0
        kept_keys, kept_values = kept
        size = kept_keys.size
        if (size == 0 or size & (size - 1) or kept_values.size != kept_keys.size or kept_keys.itemsize != sizeof(uintptr_t)
                or kept_values.itemsize != sizeof(int32_t) or not kept_keys.flags.c_contiguous
                or not kept_values.flags.c_contiguous):
            raise ValueError("a kept address table is two contiguous arrays (uint64 keys, int32 values) of one "
                             "power-of-two size")
        keys = <const uintptr_t*>cnp.PyArray_DATA(kept_keys)
        values = <const int32_t*>cnp.PyArray_DATA(kept_values)
        free(self.keys)
        free(self.values)
        self.keys = <uintptr_t*>malloc(size * sizeof(uintptr_t))
        self.values = <int32_t*>malloc(size * sizeof(int32_t))
        if self.keys is NULL or self.values is NULL:
            raise MemoryError()
        memcpy(self.keys, keys, size * sizeof(uintptr_t))
        memcpy(self.values, values, size * sizeof(int32_t))
        self.mask = size - 1
        self.used = 0
        for i in range(size):
            self.used += keys[i] != 0
        return 0

    cdef int hold(self, bint existing=True) except -1:
        """From now on keep a reference to every key put; existing: take one now to each key already put (seeded
        ones included), so call it while every key put so far is alive, i.e. before any user code has run.
        (existing=False: the keys already put are kept alive by the caller, as seed()'s are.)"""
        cdef size_t i
        if self.held is not None:
            return 0
        self.held = []
        for i in range(self.mask + 1 if existing else 0):
            if self.keys[i] != 0:
                self.held.append(<object><PyObject*>self.keys[i])
        return 0

    cdef inline size_t _slot(self, uintptr_t key) noexcept nogil:
        cdef size_t i = <size_t>(((key >> 4) * <uintptr_t>0x9E3779B97F4A7C15) >> 20) & self.mask
        while self.keys[i] != 0 and self.keys[i] != key:
            i = (i + 1) & self.mask
        return i

    cdef inline int32_t find(self, PyObject* key) noexcept nogil:
        """The value put for this address, or ABSENT."""
        cdef size_t i = self._slot(<uintptr_t>key)
        return self.values[i] if self.keys[i] != 0 else ABSENT

    cdef int put(self, PyObject* key, int32_t value) except -1:
        cdef uintptr_t* old_keys
        cdef int32_t* old_values
        cdef size_t i, j, old_size
        if 2 * (self.used + 1) > self.mask + 1:
            old_keys, old_values, old_size = self.keys, self.values, self.mask + 1
            self.mask = 2 * old_size - 1
            self.keys = <uintptr_t*>calloc(self.mask + 1, sizeof(uintptr_t))
            self.values = <int32_t*>calloc(self.mask + 1, sizeof(int32_t))
            if self.keys is NULL or self.values is NULL:
                free(old_keys)
                free(old_values)
                raise MemoryError()
            for i in range(old_size):
                if old_keys[i] != 0:
                    j = self._slot(old_keys[i])
                    self.keys[j] = old_keys[i]
                    self.values[j] = old_values[i]
            free(old_keys)
            free(old_values)
        i = self._slot(<uintptr_t>key)
        if self.keys[i] == 0:
            self.used += 1
            if self.held is not None:
                self.held.append(<object>key)
        self.keys[i] = <uintptr_t>key
        self.values[i] = value
        return 0


cdef extern from *:
    """
    static inline int kg_exact_str(PyObject* o) { return Py_TYPE(o) == &PyUnicode_Type; }
    """
    bint kg_exact_str(PyObject* o) nogil


cdef bint exact_str_keys(dict d):
    """Every key of d is an exact str: then looking an exact str up in d runs no Python code (on a hash match
    a str subclass key's own __eq__ runs, which may change or free what a caller borrowed). O(len(d))."""
    cdef Py_ssize_t pos = 0
    cdef PyObject* key
    cdef PyObject* value
    while PyDict_Next(d, &pos, &key, &value):
        if not kg_exact_str(key):
            return False
    return True
