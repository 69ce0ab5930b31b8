# Growable int32 buffers and a checked realloc (pyext/_codec.pyx includes this file; it holds the
# module's cimports).

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
