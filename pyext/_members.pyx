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

same_items(a, b) -> bool
    a and b (lists) hold the very same objects in the same order (compared by address, no __eq__ called).
    kafkagroup.model reuses what it derived from the last call's member ids when they are the same objects.

plain_counts(counts) -> (names list, counts list) or None
    counts: topic -> partition count. The keys and values in the dict's order when every key is a str and
    every value an int (not a bool) in 0 .. 2^31-1; None otherwise. kafkagroup.model compares the pair with
    the last call's to reuse what it derived from the same metadata.

same_counts(counts, names, values) -> bool
    plain_counts(counts) == (names, values), without building either list: kafkagroup.model's check that the
    metadata is the one it read last (a comparison of contents, not of the dict's identity).

address_table(names) -> (keys uint64[], values int32[])
    names[k] -> k by the str object's address, as the seed argument below takes it. Valid while the caller
    keeps every name alive (kafkagroup.model keeps the table with the metadata whose names it holds): then
    a member's topic name that is the very object of the metadata is coded without a dict lookup.

code_topic_lists(lists, code, seed=None) -> (offsets int64[M+1] or None, codes int32[n], bad)
    lists: one topic list (list or tuple of str, or None: no topics) per member. code: name -> int32 code; a name not in it
    is added with the next code (len(code)), as model.build_group's dict.setdefault does (a str
    subclass is a name too, looked up by its own __eq__ / __hash__; once one is met, each list is read from a
    tuple of its items, since that code may change the lists). A member whose
    list is the previous member's list object, or holds the very same str objects in the same order, is
    recognised without a dict lookup (members of a group mostly send the same list). When every member's
    list is equal to the first one's, offsets is None and codes is that one list (the homogeneous form);
    otherwise offsets and codes are the CSR of every member's codes. bad: index of the first member whose
    list is not a list/tuple of str, -1 when none is (nothing else returned is meaningful then). seed: an
    address_table() of names whose codes in `code` are their indices, or None.
"""
import numpy as np
cimport numpy as cnp
from libc.stdint cimport int32_t, int64_t, uintptr_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memcmp, memcpy, memset
from cpython.dict cimport PyDict_GetItem, PyDict_SetItem, PyDict_Size
from cpython.object cimport PyObject
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.unicode cimport PyUnicode_Check

cnp.import_array()


cdef extern from *:
    """
    #define KG_PREFETCH(p) __builtin_prefetch((const void*)(p))
    #define KG_IS_DICT(o) (Py_TYPE(o) == &PyDict_Type)
    #define KG_IS_STR(o) (Py_TYPE(o) == &PyUnicode_Type)
    #define KG_IS_INT(o) (Py_TYPE(o) == &PyLong_Type)
    #define KG_IS_LIST(o) (Py_TYPE(o) == &PyList_Type)
    #define KG_IS_TUPLE(o) (Py_TYPE(o) == &PyTuple_Type)
    #define KG_DICT_KEYS(o) ((const char*)((PyDictObject*)(o))->ma_keys)
    /* list[i] = v for a list made here (every slot holds a reference): no bounds or type check */
    static inline void kg_list_put(PyObject* list, Py_ssize_t i, PyObject* v) {
        PyObject** items = ((PyListObject*)list)->ob_item;
        PyObject* old = items[i];
        Py_INCREF(v);
        items[i] = v;
        Py_XDECREF(old);
    }
    """
    void KG_PREFETCH(const void* p) nogil
    bint KG_IS_DICT(PyObject* o) nogil
    bint KG_IS_STR(PyObject* o) nogil
    bint KG_IS_INT(PyObject* o) nogil
    bint KG_IS_LIST(PyObject* o) nogil
    bint KG_IS_TUPLE(PyObject* o) nogil
    const char* KG_DICT_KEYS(PyObject* o) nogil
    void kg_list_put(PyObject* lst, Py_ssize_t i, PyObject* v)
    bint PyDict_Next(object d, Py_ssize_t* pos, PyObject** key, PyObject** value)

DEF AHEAD = 16       # members prefetched ahead (id and spec dict); the spec's key table AHEAD / 2 ahead
DEF KEY_CACHE = 16   # distinct key objects whose column is remembered by address (specs mostly share theirs)
DEF MAX_COLUMNS = 16


def read_specs(dict subscriptions, dict aliases, Py_ssize_t columns):
    # Memory, not instructions, is what this costs on a large group: each member's id, spec dict and the
    # dict's key table are separate heap objects, a cache miss each when read in turn (~0.4 us a member at
    # 10k members against ~0.09 us at 1k). So the ids and specs are gathered as pointers first (the outer
    # dict's entries are contiguous) and read with prefetches ahead, which overlaps the misses.
    # A spec's keys are mostly the very str objects of every other spec (literals, json's memo): a key's
    # column and rank are remembered by its address (valid for the call: the specs hold their keys), which
    # spares a dict lookup per key; no reference count is touched but for the values kept.
    # A spec's entries are read up to its size (no last PyDict_Next to find the end: a third of the calls of a
    # two-key spec), and a column's list is made when a spec first fills it (most specs fill two of five).
    cdef Py_ssize_t members = len(subscriptions), m = 0, k, j, pos = 0, inner, rank, n_cached = 0, left
    cdef list ids = [None] * members
    cdef list cols = [None] * columns
    cdef PyObject* col_lists[MAX_COLUMNS]   # NULL until the column is first filled
    cdef PyObject* cached_key[KEY_CACHE]
    cdef int cached_where[KEY_CACHE]      # column * 256 + rank, or -1: a key no column reads
    cdef int where
    cdef PyObject* found
    cdef PyObject* key
    cdef PyObject* value
    cdef PyObject** member_ids = NULL
    cdef PyObject** specs = NULL
    cdef signed char* ranks = NULL        # [column * members + m]: rank of the field that filled it
    if not 0 <= columns <= MAX_COLUMNS:
        raise ValueError(f"read_specs reads at most {MAX_COLUMNS} columns, asked for {columns}")
    for k in range(columns):
        col_lists[k] = NULL
    member_ids = <PyObject**>malloc((members + 1) * sizeof(PyObject*))
    specs = <PyObject**>malloc((members + 1) * sizeof(PyObject*))
    ranks = <signed char*>malloc(columns * members + 1)
    if member_ids is NULL or specs is NULL or ranks is NULL:
        free(member_ids)
        free(specs)
        free(ranks)
        raise MemoryError()
    memset(ranks, 127, columns * members)
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
            kg_list_put(<PyObject*>ids, m, member_ids[m])
            inner = 0
            left = PyDict_Size(<object>specs[m])
            while left > 0 and PyDict_Next(<object>specs[m], &inner, &key, &value):
                left -= 1
                if value == <PyObject*>None:
                    continue
                if not KG_IS_STR(key):
                    return None       # (a str subclass may equal a field name: the general path reads it)
                where = -2
                for j in range(n_cached):
                    if cached_key[j] == key:
                        where = cached_where[j]
                        break
                if where == -2:
                    where = _alias_column(aliases, key, columns)
                    if n_cached < KEY_CACHE:
                        cached_key[n_cached] = key
                        cached_where[n_cached] = where
                        n_cached += 1
                if where < 0:
                    continue          # a key no column reads (the general path ignores it too)
                k = where >> 8
                rank = where & 255
                if rank < ranks[k * members + m]:
                    if col_lists[k] is NULL:
                        cols[k] = [None] * members
                        col_lists[k] = <PyObject*>cols[k]
                    kg_list_put(col_lists[k], m, value)
                    ranks[k * members + m] = <signed char>rank
    finally:
        free(member_ids)
        free(specs)
        free(ranks)
    return (ids, *cols)   # (a column nobody filled is still None)


cdef int _alias_column(dict aliases, PyObject* key, Py_ssize_t columns) except -3:
    """aliases[key] packed as column * 256 + rank, or -1 when the key is not a field name."""
    cdef PyObject* found = PyDict_GetItem(aliases, <object>key)
    if found is NULL:
        return -1
    column, rank = <tuple><object>found
    if not 0 <= column < columns or not 0 <= rank < 127:
        raise ValueError(f"read_specs: alias {<object>key!r} -> {(column, rank)!r} is outside the columns")
    return column * 256 + rank


include "address_table.pxi"


cdef extern from *:
    """
    #define KG_SEQ_ITEMS(o) (Py_TYPE(o) == &PyList_Type ? ((PyListObject*)(o))->ob_item : ((PyTupleObject*)(o))->ob_item)
    """
    PyObject** KG_SEQ_ITEMS(PyObject* o) nogil


cdef tuple _NO_TOPICS = ()   # a None list reads as this (held by the module: its address is stable)


def address_table(list names):
    # names[k] -> code k by the str object's address, laid out as _ByAddress keeps it (keys, values): the
    # seed of code_topic_lists / _claims.intern_claims for names kept alive by the caller.
    cdef _ByAddress table = _ByAddress()
    cdef Py_ssize_t k
    for k in range(len(names)):
        if type(names[k]) is not str:
            raise TypeError(f"address_table: names must be str, got {names[k]!r}")
        table.put(<PyObject*>names[k], <int32_t>k)
    keys = np.empty(table.mask + 1, dtype=np.uint64)
    values = np.empty(table.mask + 1, dtype=np.int32)
    memcpy(cnp.PyArray_DATA(keys), table.keys, (table.mask + 1) * sizeof(uintptr_t))
    memcpy(cnp.PyArray_DATA(values), table.values, (table.mask + 1) * sizeof(int32_t))
    return keys, values


def code_topic_lists(list lists, dict code, object seed=None):
    # Each list coded once into one growing C buffer (no array per member): a member whose list is the
    # previous member's object, or holds the very same str objects in the same order, points at the previous
    # member's codes instead; any other list is coded name by name, by address first (_ByAddress). The CSR
    # is laid out at the end, and only when the lists differ.
    cdef Py_ssize_t members = len(lists), m, i, n, used = 0, capacity = 64, total = 0, first_n = 0
    cdef cnp.ndarray lengths = np.zeros(members + 1, dtype=np.int64)
    cdef int64_t* length_view = <int64_t*>cnp.PyArray_DATA(lengths)   # (a raw pointer: no buffer lookup per member)
    cdef int64_t* start = <int64_t*>malloc((members + 1) * sizeof(int64_t))   # member m's codes: buf[start[m]:]
    cdef int32_t* buf = <int32_t*>malloc(capacity * sizeof(int32_t))
    cdef int32_t* grown
    cdef PyObject* lst
    cdef PyObject* prev = NULL
    cdef PyObject** items
    cdef PyObject** prev_items = NULL
    cdef PyObject* item
    cdef PyObject* found
    cdef Py_ssize_t prev_n = -1
    cdef bint same, all_same = True
    cdef int32_t c
    cdef int64_t* off
    cdef int32_t* out
    cdef _ByAddress by_address = _ByAddress()
    cdef cnp.ndarray[int32_t, ndim=1] codes
    # Once a str subclass is met (an item, or a key of code that a lookup may compare with), its __hash__ /
    # __eq__ (user code) may change or free the lists being read:
    # from then on each list is read from a tuple of its items taken before (`read`, the one before kept in
    # `read_before` for the comparison with it), and by_address keeps its names alive (_ByAddress.hold).
    cdef bint user_code = False
    cdef int plain_code = -1   # whether every key of code is an exact str (exact_str_keys): found when first needed
    cdef object read = None, read_before = None
    by_address.seed(seed)
    if buf is NULL or start is NULL:
        free(buf)
        free(start)
        raise MemoryError()
    try:
        for m in range(members):
            lst = PyList_GET_ITEM(lists, m)
            if KG_IS_LIST(lst):
                n = PyList_GET_SIZE(<object>lst)
            elif KG_IS_TUPLE(lst):
                n = PyTuple_GET_SIZE(<object>lst)
            elif lst == <PyObject*>None:
                lst = <PyObject*>_NO_TOPICS
                n = 0
            else:
                return None, None, m
            if user_code:   # (until then `read` stays None: no object assigned per member)
                if KG_IS_LIST(lst):
                    read = tuple(<object>lst)
                    lst = <PyObject*>read
                else:
                    read = None
            items = KG_SEQ_ITEMS(lst)
            same = m > 0 and (lst == prev or (n == prev_n and (n == 0 or memcmp(items, prev_items, n * sizeof(PyObject*)) == 0)))
            if same:
                start[m] = start[m - 1]
            else:
                if used + n > capacity:
                    capacity = max(2 * capacity, used + n)
                    grown = <int32_t*>realloc(buf, capacity * sizeof(int32_t))
                    if grown is NULL:
                        raise MemoryError()
                    buf = grown
                start[m] = used
                for i in range(n):
                    item = items[i]
                    c = by_address.find(item)
                    if c < 0:
                        if not PyUnicode_Check(<object>item):   # (a str subclass is a name, as check_topics says)
                            return None, None, m
                        if not user_code and plain_code < 0 and KG_IS_STR(item):
                            plain_code = exact_str_keys(code)
                        if not user_code and (not KG_IS_STR(item) or not plain_code):
                            # the lookup runs user code (a str subclass's __hash__ / __eq__, the item's or a key's
                            # of code): nothing borrowed is trusted after it (nothing has run yet, so this list is
                            # as counted, every name put is alive)
                            user_code = True
                            by_address.hold()
                            if KG_IS_LIST(lst):
                                read = tuple(<object>lst)
                                lst = <PyObject*>read
                                items = KG_SEQ_ITEMS(lst)
                                item = items[i]
                        found = PyDict_GetItem(code, <object>item)
                        if found is NULL:
                            c = <int32_t>PyDict_Size(code)
                            PyDict_SetItem(code, <object>item, c)
                        else:
                            c = <int32_t><object>found
                        by_address.put(item, c)
                    buf[used + i] = c
                if m == 0:
                    first_n = n
                elif all_same and (n != first_n or (n and memcmp(&buf[used], buf, n * sizeof(int32_t)) != 0)):
                    all_same = False
                used += n
            prev, prev_items, prev_n = lst, items, n
            if user_code:
                read_before = read   # (keeps prev_items alive when they are a tuple taken here)
            total += n
            length_view[m + 1] = total
        if members == 0:
            return None, np.zeros(0, dtype=np.int32), -1
        if all_same:
            codes = np.empty(first_n, dtype=np.int32)
            if first_n:
                memcpy(codes.data, buf, first_n * sizeof(int32_t))
            return None, codes, -1
        codes = np.empty(total, dtype=np.int32)
        out = <int32_t*>codes.data
        off = <int64_t*>lengths.data
        for m in range(members):
            n = off[m + 1] - off[m]
            if n:
                memcpy(&out[off[m]], &buf[start[m]], n * sizeof(int32_t))
        return lengths, codes, -1
    finally:
        free(buf)
        free(start)


def plain_counts(dict counts):
    # One pass over the metadata kafkagroup.model caches by: each key a str, each value an int (not a bool)
    # in 0 .. 2^31-1, else None (the caller's general path checks and words the error).
    cdef Py_ssize_t n = len(counts), pos = 0, i = 0
    cdef PyObject* key
    cdef PyObject* value
    cdef long long v
    cdef int overflow = 0
    cdef list names = [None] * n
    cdef list values = [None] * n
    while PyDict_Next(counts, &pos, &key, &value):   # borrowed: the dict keeps them alive
        if not KG_IS_STR(key) or not KG_IS_INT(value):
            return None
        # (an exact int: beyond a long long it reads as overflow, no error set; the general path words it)
        v = PyLong_AsLongLongAndOverflow(<object>value, &overflow)
        if overflow or not 0 <= v < 2147483648:
            return None
        kg_list_put(<PyObject*>names, i, key)
        kg_list_put(<PyObject*>values, i, value)
        i += 1
    return names, values


def same_counts(dict counts, list names, list values):
    # Whether plain_counts(counts) would return (names, values) (lists it returned before): the same number of
    # entries and, in the dict's order, each key equal to names[i] and each value equal to values[i], an exact
    # str and an exact int. A content comparison, so whatever happened to `counts` since (keys added, removed
    # or reinserted in another order, a count changed or replaced by an equal one, the dict itself a new
    # object) the answer is plain_counts' own; it only spares building the two lists and converting every
    # count (~360 instructions a topic against ~20 here). An identical object is equal without a call; a str
    # or int's __eq__ is exact-type only (no user code runs).
    cdef Py_ssize_t n = PyList_GET_SIZE(names), pos = 0, i = 0
    cdef PyObject* key
    cdef PyObject* value
    cdef PyObject* kept
    if PyDict_Size(counts) != n or PyList_GET_SIZE(values) != n:
        return False
    while PyDict_Next(counts, &pos, &key, &value):   # borrowed: the dict keeps them alive
        kept = PyList_GET_ITEM(names, i)
        if key != kept and (not KG_IS_STR(key) or <object>key != <object>kept):
            return False
        kept = PyList_GET_ITEM(values, i)
        if value != kept and (not KG_IS_INT(value) or <object>value != <object>kept):
            return False
        i += 1
    return i == n


def same_items(list a, list b):
    # One memcmp of the two item arrays: the same objects (addresses), in the same order.
    cdef Py_ssize_t n = PyList_GET_SIZE(a)
    if PyList_GET_SIZE(b) != n:
        return False
    return n == 0 or memcmp(KG_SEQ_ITEMS(<PyObject*>a), KG_SEQ_ITEMS(<PyObject*>b), n * sizeof(PyObject*)) == 0
