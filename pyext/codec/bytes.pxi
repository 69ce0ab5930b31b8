# Byte-level primitives shared by the reader, the interner, the decoder and the encoder: keyed
# hashing, equality of short strings, big-endian loads and stores, short copies (pyext/_codec.pyx
# includes this file; it holds the module's cimports).

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


cdef extern from *:
    """
    /* Hints that a cache line is about to be read or written (no-ops elsewhere than GCC/Clang).
       They never fault, so they may point past the end of a buffer. */
    #if defined(__GNUC__)
    #define kg_prefetch_read(p) __builtin_prefetch((const void*)(p), 0, 3)
    #define kg_prefetch_write(p) __builtin_prefetch((const void*)(p), 1, 3)
    #else
    #define kg_prefetch_read(p) ((void)(p))
    #define kg_prefetch_write(p) ((void)(p))
    #endif
    """
    void kg_prefetch_read(const void* p) noexcept nogil
    void kg_prefetch_write(const void* p) noexcept nogil

cdef inline int32_t be32(const uint8_t* p) noexcept:
    return <int32_t>kg_load_be32(p)

cdef inline int16_t be16(const uint8_t* p) noexcept:
    return <int16_t>((<uint32_t>p[0] << 8) | <uint32_t>p[1])


cdef inline uint64_t name_tail(const uint8_t* p, Py_ssize_t n) noexcept:
    """The last 8 bytes of a name (zero-padded when shorter): where names of one family differ."""
    cdef uint64_t x = 0
    if n >= 8:
        memcpy(&x, p + n - 8, 8)
    else:
        memcpy(&x, p, n)
    return x


cdef inline void _put32(char* w, uint32_t v) noexcept:
    kg_store_be32(w, v)
