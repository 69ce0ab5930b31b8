# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""kafkagroup._claims: members' owned-partition claims, as Python objects, to arrays.

Called by kafkagroup.model.build_group, which owns every rule (which claims count, which are errors, what
the messages say); this module only converts. A member's claims come in one of two forms:
- pairs: a sequence of (topic, partition) claims (tuples, TopicPartitions, any 2-item sequence);
- compact: a dict topic -> partitions (a list, tuple, set, frozenset, range, numpy integer array or any
  iterable of partition numbers), the form Kafka's coordinator keeps (Map<Uuid, Set<Integer>>). It stands
  for the pairs (topic, p) for each topic in the dict's order and each p in the partitions' iteration
  order: everything below (flat indices included) counts claims in that expanded order.

intern_claims(owned, slot, seed=None) -> (offsets int64[M+1], slots int32[n], partitions int64[n], bad)
    owned: one claims object (either form, or None for none) per member. It is the caller's own list and
           is normalised in place, so that the claims can be read again to word an error: None becomes (),
           a Mapping that is not a dict its dict, any other iterable that is not a list or tuple its tuple.
    slot:  topic name -> int32 slot chosen by the caller; a name not in it gets slot -1
    seed:  None, or _members.address_table(names) of names alive for the call whose slot is their index
    bad:   index (into the flattened claims) of the first claim that is not a (str, int) pair, or of the
           first claim of a compact topic whose partitions are not a collection (None, a number, a str);
           -1 when every claim is well-formed. The caller re-reads the claims to word the error. Nothing
           else returned is meaningful when bad >= 0.
    A partition number outside int64 is returned as -1 (out of range for every topic, as it is).
    Limit: claims must not change while they are read. A list of pairs that user code run during the call
    (a Mapping's items(), an iterable's __iter__, a sequence claim's __getitem__) resizes is refused with a
    RuntimeError when seen in pass 2's gather; one emptied after the gather is not detected (its pairs are
    borrowed, not referenced).

Cost: what dominates is memory, not instructions. The claims of a large group are 100k-1M tuples and
ints scattered over the heap; read one after another, each costs a cache miss (~80 % of the time measured
on 10k members x 10 claims). So the tuples of the pairs form are first gathered into one flat array of
pointers and then read with software prefetches a few claims ahead (the tuple 16 ahead, its partition's
int 8 ahead), which overlaps the misses. No reference count is touched per claim (the caller's lists keep
every object alive for the call). The compact form reads a contiguous array per topic instead of a
tuple per claim, and needs no Python object per partition when given a range or a numpy array.
"""
import numpy as np
cimport numpy as cnp
from collections.abc import Mapping
from libc.stdint cimport int32_t, int64_t, uintptr_t
from libc.stdlib cimport calloc, free, malloc
from libc.string cimport memcpy
from cpython.dict cimport PyDict_GetItem
from cpython.object cimport PyObject
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.list cimport PyList_GET_ITEM, PyList_GET_SIZE
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from cpython.set cimport PySet_GET_SIZE

cnp.import_array()

cdef extern from *:
    """
    #define KG_PREFETCH(p) __builtin_prefetch((const void*)(p))
    #define KG_TYPE(o) ((void*)Py_TYPE(o))
    #define KG_TUPLE_TYPE ((void*)&PyTuple_Type)
    #define KG_LIST_TYPE ((void*)&PyList_Type)
    #define KG_SET_TYPE ((void*)&PySet_Type)
    #define KG_FROZENSET_TYPE ((void*)&PyFrozenSet_Type)
    #define KG_LONG_TYPE ((void*)&PyLong_Type)
    #define KG_UNICODE_TYPE ((void*)&PyUnicode_Type)
    #define KG_LIST_ITEMS(o) (((PyListObject*)(o))->ob_item)
    #define KG_TUPLE_ITEMS(o) (((PyTupleObject*)(o))->ob_item)
    #define KG_TUPLE_SIZE(o) (((PyVarObject*)(o))->ob_size)
    #define KG_TUPLE_ITEM(o, i) (((PyTupleObject*)(o))->ob_item[i])
    /* An exact int that fits one digit (|value| < 2^30: every partition number in practice), read in place;
       0 for anything else, which the caller reads with PyLong_AsLongLongAndOverflow. */
    static inline int kg_small_int(PyObject* o, long long* value) {
        if (Py_TYPE(o) != &PyLong_Type) return 0;
    #if PY_VERSION_HEX >= 0x030C0000
        if (!PyUnstable_Long_IsCompact((PyLongObject*)o)) return 0;
        *value = (long long)PyUnstable_Long_CompactValue((PyLongObject*)o);
        return 1;
    #else
        Py_ssize_t size = Py_SIZE(o);
        if (size == 0) { *value = 0; return 1; }
        if (size == 1) { *value = (long long)((PyLongObject*)o)->ob_digit[0]; return 1; }
        if (size == -1) { *value = -(long long)((PyLongObject*)o)->ob_digit[0]; return 1; }
        return 0;
    #endif
    }
    /* A compact member's claim count when each topic's partitions are a list, tuple, set or frozenset (read as
       they are); 0 when one is not (the caller converts them first). */
    static int kg_plain_compact_size(PyObject* claims, Py_ssize_t* size) {
        Py_ssize_t pos = 0, n = 0;
        PyObject *topic, *parts;
        while (PyDict_Next(claims, &pos, &topic, &parts)) {
            PyTypeObject* type = Py_TYPE(parts);
            if (type == &PyList_Type || type == &PyTuple_Type) n += Py_SIZE(parts);
            else if (type == &PySet_Type || type == &PyFrozenSet_Type) n += PySet_GET_SIZE(parts);
            else return 0;
        }
        *size = n;
        return 1;
    }
    /* A set's items as claims of one topic from index i on, in the set's own iteration order (its table from
       slot 0 up, as `for p in s` and _PySet_NextEntry go), when every item is an int read in place: the index
       after them; -1 when an item is not (the caller reads the set item by item). */
    static Py_ssize_t kg_set_claims(PyObject* set, int32_t slot, int32_t* slots, int64_t* parts, Py_ssize_t i) {
    #if PY_VERSION_HEX < 0x030D0000
        PySetObject* so = (PySetObject*)set;
        setentry* table = so->table;
        Py_ssize_t j, mask = so->mask, left = so->used;   /* (stops at the last item: a small set is mostly empty slots) */
        long long value;
        for (j = 0; left > 0 && j <= mask; j++) {
            PyObject* key = table[j].key;
            if (key == NULL || key == _PySet_Dummy) continue;
            if (!kg_small_int(key, &value)) return -1;
            slots[i] = slot;
            parts[i] = value;
            i++;
            left--;
        }
        return i;
    #else
        (void)set; (void)slot; (void)slots; (void)parts; (void)i;
        return -1;
    #endif
    }
    """
    void KG_PREFETCH(const void* p) nogil
    int _PySet_NextEntry(object s, Py_ssize_t* pos, PyObject** key, Py_hash_t* hash)
    void* KG_TYPE(PyObject* o) nogil
    void* KG_TUPLE_TYPE
    void* KG_LIST_TYPE
    void* KG_SET_TYPE
    void* KG_FROZENSET_TYPE
    void* KG_LONG_TYPE
    void* KG_UNICODE_TYPE
    PyObject** KG_LIST_ITEMS(object o)
    PyObject** KG_TUPLE_ITEMS(object o)
    Py_ssize_t KG_TUPLE_SIZE(PyObject* o) nogil
    PyObject* KG_TUPLE_ITEM(PyObject* o, Py_ssize_t i) nogil
    bint kg_small_int(PyObject* o, long long* value) nogil
    bint kg_plain_compact_size(PyObject* claims, Py_ssize_t* size)
    Py_ssize_t kg_set_claims(PyObject* set, int32_t slot, int32_t* slots, int64_t* parts, Py_ssize_t i) nogil
    bint PyDict_Next(object d, Py_ssize_t* pos, PyObject** key, PyObject** value)

include "address_table.pxi"

DEF AHEAD = 16   # claims prefetched ahead (the tuple); its partition's int is prefetched AHEAD / 2 ahead


cdef inline object _pair(object claim):
    """The claim as a 2-tuple (topic, partition), or None when it is not a 2-item sequence."""
    if isinstance(claim, tuple):
        return claim if PyTuple_GET_SIZE(claim) == 2 else None
    if isinstance(claim, (str, bytes)):
        return None
    try:
        return (claim[0], claim[1]) if len(claim) == 2 else None
    except (TypeError, KeyError, IndexError):
        return None


cdef inline bint _partition_value(object partition, long long* value):
    """A partition number as int64 (-1 when outside int64); False when it is not an int (bool is not)."""
    cdef int overflow
    if kg_small_int(<PyObject*>partition, value):
        return True
    if type(partition) is int:
        value[0] = PyLong_AsLongLongAndOverflow(partition, &overflow)
    elif isinstance(partition, np.integer):
        value[0] = PyLong_AsLongLongAndOverflow(int(partition), &overflow)
    else:
        return False
    if overflow:
        value[0] = -1
    return True


cdef object _compact_parts(object parts):
    """A compact topic's partitions in a shape pass 2 reads: an int64 array (numpy integer arrays, ranges), a
    list, tuple, set or frozenset as it is, or a list of the iterable's items; None when they are not a
    collection of items."""
    if type(parts) is list or type(parts) is tuple or type(parts) is frozenset or type(parts) is set:
        return parts
    if type(parts) is range:
        return np.arange((<range>parts).start, (<range>parts).stop, (<range>parts).step, dtype=np.int64) \
            if len(parts) else ()
    if isinstance(parts, np.ndarray):
        if parts.ndim == 1 and parts.dtype.kind == "i":
            return np.ascontiguousarray(parts, dtype=np.int64)
        if parts.ndim == 0:
            return None
        return parts.tolist()
    if isinstance(parts, (str, bytes)):
        return None
    try:
        if iter(parts) is parts:   # an iterator: read once here, it could not be read again to word an error
            return None
        return list(parts)
    except TypeError:
        return None


def intern_claims(list owned, dict slot, object seed=None):
    cdef Py_ssize_t members = len(owned), m, n = 0, flat_n = 0, i = 0, j, k, size = 0   # (set on every path below; the compiler cannot see it)
    cdef cnp.ndarray[int64_t, ndim=1] offsets = np.empty(members + 1, dtype=np.int64)
    cdef int64_t* off = <int64_t*>cnp.PyArray_DATA(offsets)
    cdef list per_member = owned[:]      # each member's claims as pass 2 reads them (a compact dict may be replaced)
    cdef cnp.ndarray[cnp.uint8_t, ndim=1] is_compact = np.zeros(members, dtype=np.uint8)
    cdef cnp.uint8_t* compact_of = <cnp.uint8_t*>cnp.PyArray_DATA(is_compact)
    cdef bint any_compact = False
    cdef object claims, topic, parts
    cdef PyObject* raw
    cdef list compact
    # pass 1: each member's claims as a list / tuple of pairs, or (compact form) a list of (topic, partitions)
    # with the partitions in _compact_parts' shapes (None: not a collection); count the claims. Every claim
    # becomes one entry (or the first bad one stops pass 2), so each member's offsets are known here.
    off[0] = 0
    for m in range(members):
        if m + AHEAD < members:
            KG_PREFETCH(PyList_GET_ITEM(owned, m + AHEAD))
        raw = PyList_GET_ITEM(owned, m)    # (borrowed: owned holds it)
        if KG_TYPE(raw) == KG_LIST_TYPE or KG_TYPE(raw) == KG_TUPLE_TYPE:
            size = KG_TUPLE_SIZE(raw)      # (ob_size of either)
            flat_n += size
        else:
            claims = <object>raw
            if isinstance(claims, dict) or isinstance(claims, Mapping):
                if type(claims) is not dict:
                    claims = owned[m] = per_member[m] = dict(claims.items())
                # read as it is when every topic's partitions are a list, tuple, set or frozenset (the usual
                # case: no object made per topic, which would also wake the cyclic collector on a large group)
                compact_of[m] = 1 if kg_plain_compact_size(<PyObject*>claims, &size) else 2
                any_compact = True
                if compact_of[m] == 2:
                    compact = []
                    size = 0
                    for topic, parts in (<dict>claims).items():
                        parts = _compact_parts(parts)
                        compact.append((topic, parts))
                        if parts is None:
                            size += 1      # stands for one (bad) claim: the flat index of the error
                            break
                        size += len(parts)
                    per_member[m] = compact
            else:
                claims = owned[m] = per_member[m] = () if claims is None else tuple(claims)
                size = len(claims)
                flat_n += size
        n += size
        off[m + 1] = n
    cdef cnp.ndarray[int32_t, ndim=1] slots = np.empty(n, dtype=np.int32)
    cdef cnp.ndarray[int64_t, ndim=1] partitions = np.empty(n, dtype=np.int64)
    cdef int32_t* slot_view = <int32_t*>cnp.PyArray_DATA(slots)      # (raw pointers: a memoryview costs ~1 us
    cdef int64_t* part_view = <int64_t*>cnp.PyArray_DATA(partitions)  # to acquire, a third of a 100-member call)
    # the pairs form's claims, gathered into one array of borrowed pointers (the lists keep them alive), then
    # AHEAD pointers to a well-formed claim that is never read as one: prefetches ahead need no bounds check
    cdef PyObject** flat = <PyObject**>malloc((flat_n + AHEAD) * sizeof(PyObject*))
    if flat is NULL:
        raise MemoryError()
    cdef PyObject** src
    cdef _ByAddress by_address
    j = 0
    for m in range(members):
        if compact_of[m]:
            continue
        raw = PyList_GET_ITEM(per_member, m)
        size = KG_TUPLE_SIZE(raw)
        if size != off[m + 1] - off[m]:
            # pass 1 ran user code (a Mapping's items(), an iterable's tuple()) that changed a list counted
            # before it: flat and the output arrays are sized by the counts, so refuse rather than overrun them
            free(flat)
            raise RuntimeError(f"member #{m}'s owned claims changed while they were read "
                               f"({off[m + 1] - off[m]} claims, then {size})")
        if size:
            src = KG_LIST_ITEMS(<object>raw) if KG_TYPE(raw) == KG_LIST_TYPE else KG_TUPLE_ITEMS(<object>raw)
            memcpy(&flat[j], src, size * sizeof(PyObject*))
            j += size
    for k in range(AHEAD):
        flat[flat_n + k] = <PyObject*>_PAD_CLAIM
    try:
        if not any_compact:   # every claim is in flat, in output order
            by_address = _ByAddress()
            by_address.seed(seed)
            bad = _read_pairs(flat, flat_n, 0, slot, by_address, slot_view, part_view)
        else:
            bad = _read(per_member, compact_of, flat, flat_n, slot, off, slot_view, part_view, seed)
    finally:
        free(flat)
    return offsets, slots, partitions, bad


cdef tuple _PAD_CLAIM = ("", 0)   # what flat holds past its claims (only ever prefetched)


cdef inline int32_t _topic_slot(PyObject* topic, dict slot, _ByAddress by_address) except? ABSENT:
    """The slot of a claim's topic str (-1: not in `slot`): by address when this object was seen in the call,
    else by name, then remembered by address (the caller's objects hold the str for the whole call)."""
    cdef int32_t c = by_address.find(topic)
    cdef PyObject* found
    if c == ABSENT:
        found = PyDict_GetItem(slot, <object>topic)
        c = -1 if found is NULL else <int32_t><object>found
        by_address.put(topic, c)
    return c


cdef Py_ssize_t _read_pairs(PyObject** flat, Py_ssize_t count, Py_ssize_t i, dict slot, _ByAddress by_address,
                            int32_t* slot_view, int64_t* part_view) except -2:
    """Pairs-form claims flat[0..count) into entries i.. : -1, or the first bad claim's entry index. flat holds
    AHEAD readable pointers past `count` (prefetched, never read as claims)."""
    cdef Py_ssize_t f
    cdef PyObject* claim
    cdef PyObject* ahead
    cdef PyObject* t
    cdef PyObject* item
    cdef PyObject* found
    cdef PyObject* last_topic = NULL      # the tuple claims' topic before, and its slot
    cdef int32_t last_slot = -1, c
    cdef long long value
    cdef object pair, topic
    # claims name the same few topics over and over, mostly as the very same str objects: their slot is
    # looked up by address first (a few ns), by the dict once per distinct object
    for f in range(count):
        KG_PREFETCH(flat[f + AHEAD])
        ahead = flat[f + AHEAD // 2]
        if KG_TYPE(ahead) == KG_TUPLE_TYPE and KG_TUPLE_SIZE(ahead) == 2:
            KG_PREFETCH(KG_TUPLE_ITEM(ahead, 1))
        claim = flat[f]
        if KG_TYPE(claim) == KG_TUPLE_TYPE and KG_TUPLE_SIZE(claim) == 2:
            # (borrowed pointers throughout: the tuple holds its items for the whole call)
            t = KG_TUPLE_ITEM(claim, 0)
            if KG_TYPE(t) != KG_UNICODE_TYPE:
                return i
            item = KG_TUPLE_ITEM(claim, 1)
            if not kg_small_int(item, &value) and not _partition_value(<object>item, &value):
                return i
            # (only a tuple claim's topic is cached by address: the tuple holds it for the whole call, so its
            # address names this string throughout; a member's claims mostly repeat the topic of the claim
            # before, which is checked first)
            if t != last_topic:
                last_topic, last_slot = t, _topic_slot(t, slot, by_address)
            c = last_slot
        else:
            # another sequence: its items may be made afresh on each read (and freed after), so its topic is
            # looked up by name
            pair = _pair(<object>claim)
            if pair is None:
                return i
            topic = <object>PyTuple_GET_ITEM(pair, 0)
            if type(topic) is not str or not _partition_value(<object>PyTuple_GET_ITEM(pair, 1), &value):
                return i
            found = PyDict_GetItem(slot, topic)
            c = -1 if found is NULL else <int32_t><object>found
        slot_view[i] = c
        part_view[i] = value
        i += 1
    return -1


cdef Py_ssize_t _read(list per_member, const cnp.uint8_t* is_compact, PyObject** flat, Py_ssize_t flat_n, dict slot,
                      const int64_t* off, int32_t* slot_view, int64_t* part_view, object seed) except -2:
    """Pass 2 when some member's claims are compact: every claim into slot_view / part_view, member by member
    (member m's from off[m]); the first bad claim's flat index, or -1."""
    cdef Py_ssize_t members = len(per_member), m, i, f = 0, n, bad, k
    cdef PyObject* t
    cdef PyObject* item
    cdef PyObject* last_topic = NULL      # the compact topic before (a str the member's dict holds), and its slot
    cdef int32_t last_slot = -1
    cdef Py_ssize_t pos
    cdef object claims, topic, parts
    cdef _ByAddress by_address = _ByAddress()
    by_address.seed(seed)
    for m in range(members):
        claims = per_member[m]
        i = off[m]
        if not is_compact[m]:
            n = off[m + 1] - i
            if n:
                bad = _read_pairs(&flat[f], n, i, slot, by_address, slot_view, part_view)
                if bad >= 0:
                    return bad
                f += n
        elif is_compact[m] == 1:
            pos = 0
            while PyDict_Next(claims, &pos, &t, &item):   # (borrowed: the member's dict holds them)
                if KG_TYPE(t) == KG_UNICODE_TYPE and (KG_TYPE(item) == KG_SET_TYPE or KG_TYPE(item) == KG_FROZENSET_TYPE):
                    # the usual compact topic (a set of small ints), read here: no call per topic
                    if t != last_topic:
                        last_topic, last_slot = t, _topic_slot(t, slot, by_address)
                    k = kg_set_claims(item, last_slot, slot_view, part_view, i)
                    if k >= 0:
                        i = k
                        continue
                i = _topic_claims(<object>t, <object>item, i, slot, by_address, slot_view, part_view)
                if i < 0:
                    return -i - 2
        else:
            for topic, parts in <list>claims:
                i = _topic_claims(topic, parts, i, slot, by_address, slot_view, part_view)
                if i < 0:
                    return -i - 2
    return -1


cdef Py_ssize_t _topic_claims(object topic, object parts, Py_ssize_t i, dict slot, _ByAddress by_address,
                              int32_t* slot_view, int64_t* part_view) except? -1:
    """One compact topic's claims from flat index i on: the index after them, or -(bad index) - 2. (Raw
    pointers, not memoryviews: passing a memoryview acquires and releases it, ~100 ns a topic.)"""
    cdef Py_ssize_t count, k
    cdef int32_t topic_slot
    cdef long long value
    cdef int64_t[::1] arr
    cdef object partition
    cdef Py_ssize_t pos = 0
    cdef PyObject* item
    cdef Py_hash_t hash_
    if parts is None:
        return -i - 2
    if type(parts) is frozenset or type(parts) is set:
        count = PySet_GET_SIZE(parts)
    else:
        count = len(parts)
    if count == 0:
        return i
    if type(topic) is not str:
        return -i - 2
    # (the topic is cached by address: the member's dict holds the str for the whole call)
    topic_slot = _topic_slot(<PyObject*>topic, slot, by_address)
    if type(parts) is frozenset or type(parts) is set:
        k = kg_set_claims(<PyObject*>parts, topic_slot, slot_view, part_view, i)
        if k >= 0:
            return k
        # _PySet_NextEntry: the set's own order, as `for p in parts` gives it, without an iterator object
        while _PySet_NextEntry(parts, &pos, &item, &hash_):
            if not _partition_value(<object>item, &value):
                return -i - 2
            slot_view[i] = topic_slot
            part_view[i] = value
            i += 1
        return i
    if isinstance(parts, np.ndarray):
        arr = parts
        for k in range(count):
            slot_view[i] = topic_slot
            part_view[i] = arr[k]
            i += 1
        return i
    for k in range(count):
        if k + AHEAD < count:
            KG_PREFETCH(PyList_GET_ITEM(parts, k + AHEAD) if type(parts) is list else PyTuple_GET_ITEM(parts, k + AHEAD))
        partition = <object>(PyList_GET_ITEM(parts, k) if type(parts) is list else PyTuple_GET_ITEM(parts, k))
        if not _partition_value(partition, &value):
            return -i - 2
        slot_view[i] = topic_slot
        part_view[i] = value
        i += 1
    return i
