# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""kafkagroup._members: a group's member specs (Python dicts) to columns and topic-name codes, in one pass.

Called by kafkagroup.model.build_group, which owns every rule (field names and their aliases, what is an
error and what the message says); this module only reads and converts, and hands back None whenever a
spec is not of the plain shape below so the caller takes its general path (which words every error).

read_specs(subscriptions, aliases, columns) -> (ids, column 0, ..., column columns-1) or None
    subscriptions: member id -> dict spec. aliases: field name -> (column, rank); a column's value is
    the value of its lowest-ranked field that is not None (model._field's rule: the first alias given).
    A column nobody fills is None instead of a list. None is returned when a spec is not a dict or a
    member id is not a str. Cost: one lookup per key of each spec, ~0.1 us per member, against ~20 us
    for the general path.

code_topic_lists(lists, code) -> (offsets int64[M+1] or None, codes int32[n], bad)
    lists: one topic list (list or tuple of str) per member. code: name -> int32 code; a name not in it
    is added with the next code (len(code)), as model.build_group's dict.setdefault does. A member whose
    list is the previous member's list object, or holds the very same str objects in the same order, is
    recognised without a dict lookup (members of a group mostly send the same list). When every member's
    list is equal to the first one's, offsets is None and codes is that one list (the homogeneous form);
    otherwise offsets and codes are the CSR of every member's codes. bad: index of the first member whose
    list is not a list/tuple of str, -1 when none is (nothing else returned is meaningful then).
"""
import numpy as np
cimport numpy as cnp
from libc.stdint cimport int32_t, int64_t, uintptr_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcmp, memcpy
from cpython.dict cimport PyDict_GetItem, PyDict_SetItem, PyDict_Size
from cpython.object cimport PyObject
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE

cnp.import_array()


cdef extern from *:
    """
    #define KG_PREFETCH(p) __builtin_prefetch((const void*)(p))
    #define KG_IS_DICT(o) (Py_TYPE(o) == &PyDict_Type)
    #define KG_IS_STR(o) (Py_TYPE(o) == &PyUnicode_Type)
    #define KG_DICT_KEYS(o) ((const char*)((PyDictObject*)(o))->ma_keys)
    """
    void KG_PREFETCH(const void* p) nogil
    bint KG_IS_DICT(PyObject* o) nogil
    bint KG_IS_STR(PyObject* o) nogil
    const char* KG_DICT_KEYS(PyObject* o) nogil
    bint PyDict_Next(object d, Py_ssize_t* pos, PyObject** key, PyObject** value)

DEF AHEAD = 16   # members prefetched ahead (id and spec dict); the spec's key table AHEAD / 2 ahead


def read_specs(dict subscriptions, dict aliases, Py_ssize_t columns):
    # Memory, not instructions, is what this costs on a large group: each member's id, spec dict and the
    # dict's key table are separate heap objects, a cache miss each when read in turn (~0.4 us a member at
    # 10k members against ~0.09 us at 1k). So the ids and specs are gathered as pointers first (the outer
    # dict's entries are contiguous) and read with prefetches ahead, which overlaps the misses.
    cdef Py_ssize_t members = len(subscriptions), m = 0, k, rank, pos = 0, inner
    cdef list ids = [None] * members
    cdef list cols = [None] * columns
    cdef list filled = [False] * columns
    cdef cnp.ndarray[cnp.int8_t, ndim=2] ranks = np.full((columns, members), 127, dtype=np.int8)
    cdef PyObject* found
    cdef PyObject* key
    cdef PyObject* value
    cdef PyObject** member_ids = NULL
    cdef PyObject** specs = NULL
    cdef tuple where
    cdef list col
    for k in range(columns):
        cols[k] = [None] * members
    member_ids = <PyObject**>malloc((members + 1) * sizeof(PyObject*))
    specs = <PyObject**>malloc((members + 1) * sizeof(PyObject*))
    if member_ids is NULL or specs is NULL:
        free(member_ids)
        free(specs)
        raise MemoryError()
    try:
        while PyDict_Next(subscriptions, &pos, &key, &value):   # borrowed: the dict keeps them alive
            member_ids[m] = key
            specs[m] = value
            m += 1
        for m in range(members):
            if m + AHEAD < members:
                KG_PREFETCH(member_ids[m + AHEAD])
                KG_PREFETCH(specs[m + AHEAD])
            if m + AHEAD // 2 < members and KG_IS_DICT(specs[m + AHEAD // 2]):
                KG_PREFETCH(KG_DICT_KEYS(specs[m + AHEAD // 2]))
                KG_PREFETCH(KG_DICT_KEYS(specs[m + AHEAD // 2]) + 64)
            if not KG_IS_STR(member_ids[m]) or not KG_IS_DICT(specs[m]):
                return None
            ids[m] = <object>member_ids[m]
            inner = 0
            while PyDict_Next(<object>specs[m], &inner, &key, &value):
                if value == <PyObject*>None:
                    continue
                if not KG_IS_STR(key):
                    return None       # (a str subclass may equal a field name: the general path reads it)
                found = PyDict_GetItem(aliases, <object>key)
                if found is NULL:
                    continue          # a key no column reads (the general path ignores it too)
                where = <tuple><object>found
                k = where[0]
                rank = where[1]
                if rank < ranks[k, m]:
                    col = <list>cols[k]
                    col[m] = <object>value
                    ranks[k, m] = rank
                    filled[k] = True
    finally:
        free(member_ids)
        free(specs)
    for k in range(columns):
        if not filled[k]:
            cols[k] = None
    return (ids, *cols)


include "address_table.pxi"


cdef inline PyObject* _item(object seq, bint is_list, Py_ssize_t i):
    return PyList_GET_ITEM(seq, i) if is_list else PyTuple_GET_ITEM(seq, i)


def code_topic_lists(list lists, dict code):
    cdef Py_ssize_t members = len(lists), m, i, n, total = 0
    cdef cnp.ndarray[int64_t, ndim=1] lengths = np.zeros(members + 1, dtype=np.int64)
    cdef list coded = [None] * members      # each member's codes (the previous member's array when the same)
    cdef object lst, prev = None
    cdef bint is_list, prev_is_list = False, same, all_same = True
    cdef Py_ssize_t prev_n = -1
    cdef PyObject* item
    cdef PyObject* found
    cdef cnp.ndarray[int32_t, ndim=1] first_codes = None
    cdef cnp.ndarray[int32_t, ndim=1] codes
    cdef int32_t[::1] out
    cdef _ByAddress by_address = _ByAddress()
    cdef int32_t c
    for m in range(members):
        lst = lists[m]
        if type(lst) is list:
            is_list = True
            n = PyList_GET_SIZE(lst)
        elif type(lst) is tuple:
            is_list = False
            n = PyTuple_GET_SIZE(lst)
        else:
            return None, None, m
        same = m > 0 and (lst is prev)
        if not same and m > 0 and n == prev_n:
            same = True
            for i in range(n):
                if _item(lst, is_list, i) != _item(prev, prev_is_list, i):
                    same = False
                    break
        if same:
            coded[m] = coded[m - 1]
        else:
            codes = np.empty(n, dtype=np.int32)
            out = codes
            for i in range(n):
                item = _item(lst, is_list, i)
                c = by_address.find(item)
                if c < 0:
                    if type(<object>item) is not str:
                        return None, None, m
                    found = PyDict_GetItem(code, <object>item)
                    if found is NULL:
                        c = <int32_t>PyDict_Size(code)
                        PyDict_SetItem(code, <object>item, c)
                    else:
                        c = <int32_t><object>found
                    by_address.put(item, c)
                out[i] = c
            coded[m] = codes
            if m == 0:
                first_codes = codes
            elif all_same and (n != first_codes.shape[0] or
                               (n and memcmp(&out[0], <int32_t*>first_codes.data, n * sizeof(int32_t)) != 0)):
                all_same = False
        total += n
        lengths[m + 1] = total
        prev, prev_is_list, prev_n = lst, is_list, n
    if members == 0:
        return None, np.zeros(0, dtype=np.int32), -1
    if all_same:
        return None, first_codes, -1
    codes = np.empty(total, dtype=np.int32)
    out = codes
    cdef int32_t[::1] src
    for m in range(members):
        n = lengths[m + 1] - lengths[m]
        if n:
            src = coded[m]
            memcpy(&out[lengths[m]], &src[0], n * sizeof(int32_t))
    return lengths, codes, -1
