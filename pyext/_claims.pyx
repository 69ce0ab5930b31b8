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
    RuntimeError when seen in pass 2's gather; one changed after the gather is read as it was gathered (pass 2
    takes a reference to every claim not yet read before it runs any user code: a claim's __getitem__ or
    __int__, a str subclass's __eq__ / __hash__). A compact topic's container that user code (an item's
    __int__) grows or shortens while it is read is refused with a RuntimeError, never read or written past its
    count. The topics cached by address are kept alive for the call (_ByAddress.hold), so that a str freed by
    user code and another made at its address are never taken for one another.

Cost: what dominates is memory, not instructions. The claims of a large group are 100k-1M tuples and
ints scattered over the heap; read one after another, each costs a cache miss (~80 % of the time measured
on 10k members x 10 claims). So the tuples of the pairs form are first gathered into one flat array of
pointers and then read with software prefetches a few claims ahead (the tuple 16 ahead, its partition's
int 8 ahead), which overlaps the misses. No reference count is touched per claim (the caller's lists keep
every object alive for the call). The compact form is read in pass 1, member by member, into growable
buffers (_CompactReader): each member's dict walked once (PyDict_Next, ~50 instructions a topic, the
largest single cost of a one-item set), its containers' items gathered, then read as ints; a one-item
set's item is found without a loop over its table. It needs no Python object per partition when given a
range or a numpy array.
"""
cimport cython
import numpy as np
cimport numpy as cnp
from collections.abc import Mapping
from libc.stdint cimport int32_t, int64_t, uintptr_t
from libc.stdlib cimport calloc, free, malloc, realloc
from libc.string cimport memcpy, memset
from cpython.dict cimport PyDict_GetItem
from cpython.object cimport PyObject
from cpython.ref cimport Py_XDECREF, Py_XINCREF
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
    #define KG_DICT_TYPE ((void*)&PyDict_Type)
    #define KG_LIST_ITEMS(o) (((PyListObject*)(o))->ob_item)
    #define KG_TUPLE_ITEMS(o) (((PyTupleObject*)(o))->ob_item)
    #define KG_TUPLE_SIZE(o) (((PyVarObject*)(o))->ob_size)
    #define KG_TUPLE_ITEM(o, i) (((PyTupleObject*)(o))->ob_item[i])
    #define KG_SEQ_ITEMS(o) (Py_TYPE(o) == &PyList_Type ? ((PyListObject*)(o))->ob_item : ((PyTupleObject*)(o))->ob_item)
    /* a dict's key table (PyDictObject.ma_keys of the non-limited API): only ever prefetched, never read */
    #define KG_DICT_KEYS(o) ((const char*)((PyDictObject*)(o))->ma_keys)
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
    /* A set's items (borrowed pointers) written to out[0..], in the set's own iteration order (its table from
       slot 0 up, as `for p in s` and _PySet_NextEntry go): their count, or -1 where the layout is not read
       (Python >= 3.13: the caller reads the set by the general path). out needs room for the set's size plus
       PySet_MINSIZE pointers (the branch-free loop below writes one slot past the last item).
       Relies on PySetObject as Include/cpython/setobject.h (the non-limited API) declares it in 3.8-3.12:
       `table` of `mask + 1` entries, `fill` (live + deleted entries), `used` (live entries), a deleted
       entry's key being _PySet_Dummy, a small set's table having PySet_MINSIZE (8) entries. */
    static inline Py_ssize_t kg_set_items(PyObject* set, PyObject** out, Py_ssize_t* guess) {
    #if PY_VERSION_HEX < 0x030D0000
        PySetObject* so = (PySetObject*)set;
        setentry* table = so->table;
        Py_ssize_t j, n = 0, mask = so->mask, left = so->used;
        if (left == 1 && so->fill == 1 && mask == PySet_MINSIZE - 1) {
            /* one item, no deleted entry: the only non-NULL key of the 8 slots. Tried first in the slot where
               the one-item set before had its item (*guess: a member's targets mostly hold the same partition
               number of each topic, whose hash picks the slot), which reads one of the set's cache lines
               instead of all of them; else every slot, without a branch per slot. */
            uintptr_t key = (uintptr_t)table[*guess].key, k;
            Py_ssize_t at = 0;
            if (key != 0) {
                out[0] = (PyObject*)key;
                return 1;
            }
            for (j = 0; j < PySet_MINSIZE; j++) {
                k = (uintptr_t)table[j].key;
                key |= k;
                at |= (k != 0) * j;
            }
            *guess = at;
            out[0] = (PyObject*)key;
            return 1;
        }
        if (so->fill == left && mask == PySet_MINSIZE - 1) {
            /* a small set that never lost an item (a target is built, not edited): each non-NULL key of its 8
               slots is an item, gathered without a branch per slot (where the one item of a one-item set sits
               depends on its hash: a loop that stops at it mispredicts its exit) */
            for (j = 0; j < PySet_MINSIZE; j++) {
                PyObject* key = table[j].key;
                out[n] = key;
                n += key != NULL;
            }
            return n == left ? n : -1;
        }
        for (j = 0; left > 0 && j <= mask; j++) {   /* (stops at the last item) */
            PyObject* key = table[j].key;
            if (key == NULL || key == _PySet_Dummy) continue;
            out[n++] = key;
            left--;
        }
        return left == 0 ? n : -1;
    #else
        (void)set; (void)out; (void)guess;
        return -1;
    #endif
    }
    /* Scratch of one compact member as kg_gather_member lays it out: its topics and containers (borrowed from
       its dict), each container's item count and its topic's slot, and all their items (borrowed from the
       containers). A member's dict mostly lists the very topic objects of the member before, in the same
       order: the slot of the topic at position k < KG_POSITIONS is remembered with its address (valid while
       the dicts hold the topics, i.e. for the call, unless user code run meanwhile drops one). */
    #define KG_POSITIONS 64
    #define KG_SLOT_UNKNOWN INT32_MIN
    typedef struct {
        PyObject** topics;
        PyObject** containers;
        Py_ssize_t* sizes;
        int32_t* slots;
        Py_ssize_t entry_room;
        PyObject** items;
        Py_ssize_t item_room;
        Py_ssize_t unknown;            /* entries with items whose slot is KG_SLOT_UNKNOWN */
        Py_ssize_t guess;              /* table slot of the last one-item set's item (kg_set_items) */
        PyObject* known_topic[KG_POSITIONS];
        int32_t known_slot[KG_POSITIONS];
    } kg_member_scratch;
    static void kg_scratch_free(kg_member_scratch* s) {
        free(s->topics); free(s->containers); free(s->sizes); free(s->slots); free(s->items);
    }
    static int kg_grow(void** p, Py_ssize_t room, Py_ssize_t want, size_t item) {
        void* grown = realloc(*p, (size_t)want * item);
        (void)room;
        if (grown == NULL) return -1;
        *p = grown;
        return 0;
    }
    #define KG_NOT_PLAIN (-1)
    #define KG_NO_MEMORY (-2)
    /* A compact member's dict walked once into s (its entries, then each container's items, each stage
       prefetching what the next reads: a large group's containers and ints are scattered over the heap, and
       the misses, not the instructions, are what reading them costs): the number of items, with *entries
       the dict's size; KG_NOT_PLAIN when a container is not a set, frozenset, list or tuple, or a topic with
       items is not an exact str; KG_NO_MEMORY. Runs no Python code, so what it borrows stays valid until the
       caller runs some. */
    static Py_ssize_t kg_gather_member(PyObject* dict, kg_member_scratch* s, Py_ssize_t* entries) {
        Py_ssize_t n = PyDict_GET_SIZE(dict), k = 0, pos = 0, e, items = 0, size, j;
        PyObject *topic, *container;
        if (n > s->entry_room) {
            Py_ssize_t room = n > 2 * s->entry_room ? n : 2 * s->entry_room;
            if (kg_grow((void**)&s->topics, s->entry_room, room, sizeof(PyObject*)) < 0
                    || kg_grow((void**)&s->containers, s->entry_room, room, sizeof(PyObject*)) < 0
                    || kg_grow((void**)&s->sizes, s->entry_room, room, sizeof(Py_ssize_t)) < 0
                    || kg_grow((void**)&s->slots, s->entry_room, room, sizeof(int32_t)) < 0)
                return KG_NO_MEMORY;
            s->entry_room = room;
        }
        while (k < n && PyDict_Next(dict, &pos, &topic, &container)) {
            s->topics[k] = topic;
            s->containers[k] = container;
            __builtin_prefetch(container);
            /* (and, were it a small set, the entry where kg_set_items looks first; a tuple's items follow its
               header: a list's are elsewhere, read when gathered) */
    #if PY_VERSION_HEX < 0x030D0000
            __builtin_prefetch(&((PySetObject*)container)->smalltable[s->guess]);
    #endif
            k++;
        }
        {
            /* (the scratch's fields in locals: the stores through `out` could alias them, and the compiler
               would reload each one per container) */
            PyObject** topics = s->topics;
            PyObject** containers = s->containers;
            Py_ssize_t* sizes = s->sizes;
            int32_t* slots = s->slots;
            PyObject** all_items = s->items;
            Py_ssize_t item_room = s->item_room, unknown = 0;
            for (e = 0; e < k; e++) {
                PyObject** out;
                PyTypeObject* type;
                container = containers[e];
                type = Py_TYPE(container);
                if (type == &PySet_Type || type == &PyFrozenSet_Type) size = PySet_GET_SIZE(container);
                else if (type == &PyList_Type || type == &PyTuple_Type) size = Py_SIZE(container);
                else return KG_NOT_PLAIN;
                sizes[e] = size;
                if (size == 0) continue;
                topic = topics[e];
                if (Py_TYPE(topic) != &PyUnicode_Type) return KG_NOT_PLAIN;
                if (e < KG_POSITIONS && s->known_topic[e] == topic) {
                    slots[e] = s->known_slot[e];
                } else {
                    slots[e] = KG_SLOT_UNKNOWN;
                    unknown++;
                }
                if (items + size + PySet_MINSIZE > item_room) {
                    Py_ssize_t room = items + size + PySet_MINSIZE;
                    if (room < 2 * item_room) room = 2 * item_room;
                    if (kg_grow((void**)&s->items, item_room, room, sizeof(PyObject*)) < 0) return KG_NO_MEMORY;
                    all_items = s->items;
                    item_room = s->item_room = room;
                }
                out = all_items + items;
                if (type == &PyList_Type || type == &PyTuple_Type) {
                    PyObject** from = type == &PyList_Type ? ((PyListObject*)container)->ob_item
                                                           : ((PyTupleObject*)container)->ob_item;
                    for (j = 0; j < size; j++) out[j] = from[j];
                } else if (kg_set_items(container, out, &s->guess) != size) {
                    return KG_NOT_PLAIN;
                }
                for (j = 0; j < size; j++) __builtin_prefetch(out[j]);
                items += size;
            }
            s->unknown = unknown;
        }
        *entries = k;
        return items;
    }
    /* The gathered items of a member (every slot known) read in place as one-digit ints into slots_out /
       parts_out (room for them all): 0, or KG_NOT_PLAIN at the first item that is not one. */
    static int kg_read_member(const kg_member_scratch* s, Py_ssize_t entries, int32_t* slots_out, int64_t* parts_out) {
        PyObject** at = s->items;
        Py_ssize_t e, x;
        for (e = 0; e < entries; e++) {
            Py_ssize_t size = s->sizes[e];
            int32_t c = s->slots[e];
            for (x = 0; x < size; x++) {
                long long value;
                if (!kg_small_int(at[x], &value)) return KG_NOT_PLAIN;
                slots_out[x] = c;
                parts_out[x] = value;
            }
            at += size;
            slots_out += size;
            parts_out += size;
        }
        return 0;
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
    void* KG_DICT_TYPE
    PyObject** KG_LIST_ITEMS(object o)
    PyObject** KG_TUPLE_ITEMS(object o)
    Py_ssize_t KG_TUPLE_SIZE(PyObject* o) nogil
    PyObject* KG_TUPLE_ITEM(PyObject* o, Py_ssize_t i) nogil
    PyObject** KG_SEQ_ITEMS(PyObject* o) nogil
    const char* KG_DICT_KEYS(PyObject* o) nogil
    bint kg_small_int(PyObject* o, long long* value) nogil
    ctypedef struct kg_member_scratch:
        PyObject** topics
        Py_ssize_t* sizes
        int32_t* slots
        Py_ssize_t unknown
        PyObject** known_topic
        int32_t* known_slot
    void kg_scratch_free(kg_member_scratch* s)
    Py_ssize_t kg_gather_member(PyObject* d, kg_member_scratch* s, Py_ssize_t* entries)
    int kg_read_member(const kg_member_scratch* s, Py_ssize_t entries, int32_t* slots_out, int64_t* parts_out)
    Py_ssize_t KG_NOT_PLAIN
    Py_ssize_t KG_NO_MEMORY
    int32_t KG_SLOT_UNKNOWN
    Py_ssize_t KG_POSITIONS
    Py_ssize_t PySet_MINSIZE
    Py_ssize_t PyDict_GET_SIZE(object d)
    bint PyDict_Next(object d, Py_ssize_t* pos, PyObject** key, PyObject** value)

include "address_table.pxi"

DEF AHEAD = 16   # claims prefetched ahead (the tuple); its partition's int is prefetched AHEAD / 2 ahead
DEF HINT_CAP = 1 << 20   # at most this many compact claims reserved ahead, on the first member's count


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
    cdef Py_ssize_t members = len(owned), m, n = 0, flat_n = 0, i, j, k, size = 0, stop, c = 0
    cdef Py_ssize_t bad_compact = -1      # the first bad compact claim's flat index (pass 1 stops there)
    cdef cnp.ndarray[int64_t, ndim=1] offsets = np.empty(members + 1, dtype=np.int64)
    cdef int64_t* off = <int64_t*>cnp.PyArray_DATA(offsets)
    cdef list per_member = owned[:]      # each member's claims as pass 2 reads them (user code may not resize it)
    cdef cnp.ndarray[cnp.uint8_t, ndim=1] is_compact = np.zeros(members, dtype=np.uint8)
    cdef cnp.uint8_t* compact_of = <cnp.uint8_t*>cnp.PyArray_DATA(is_compact)
    cdef bint any_compact = False, hinted = False
    cdef object claims
    cdef PyObject* raw
    cdef PyObject* ahead
    cdef _CompactReader compact = _CompactReader(slot, seed)
    # pass 1: each member's claims counted as a list / tuple of pairs (read in pass 2), or, compact, read here
    # into the reader's buffers; so each member's offsets are known here.
    off[0] = 0
    stop = members
    for m in range(members):
        if m + AHEAD < members:
            KG_PREFETCH(PyList_GET_ITEM(owned, m + AHEAD))
        if m + AHEAD // 2 < members:
            ahead = PyList_GET_ITEM(owned, m + AHEAD // 2)
            if KG_TYPE(ahead) == KG_DICT_TYPE:   # a compact member's key table, read a few members on
                KG_PREFETCH(KG_DICT_KEYS(ahead))
                KG_PREFETCH(KG_DICT_KEYS(ahead) + 64)
                KG_PREFETCH(KG_DICT_KEYS(ahead) + 128)
        raw = PyList_GET_ITEM(owned, m)    # (borrowed: owned holds it)
        if KG_TYPE(raw) == KG_LIST_TYPE or KG_TYPE(raw) == KG_TUPLE_TYPE:
            size = KG_TUPLE_SIZE(raw)      # (ob_size of either)
            flat_n += size
        else:
            claims = <object>raw
            if isinstance(claims, dict) or isinstance(claims, Mapping):
                if type(claims) is not dict:
                    claims = owned[m] = per_member[m] = dict(claims.items())
                compact_of[m] = 1
                any_compact = True
                size = compact.n
                k = compact.read(<dict>claims)
                if k >= 0:                 # the member's k-th claim is bad: the claims before it are counted
                    bad_compact = n + k
                    stop = m
                    break
                size = compact.n - size
                if size and not hinted:      # room for every member's claims if they claim as many (capped)
                    hinted = True
                    compact._room(min(size * (members - m - 1), HINT_CAP))
            else:
                claims = owned[m] = per_member[m] = () if claims is None else tuple(claims)
                size = len(claims)
                flat_n += size
        n += size
        off[m + 1] = n
    for m in range(stop, members):         # (not meaningful when bad >= 0: set, not left unset)
        off[m + 1] = n
    cdef cnp.ndarray[int32_t, ndim=1] slots = np.empty(n, dtype=np.int32)
    cdef cnp.ndarray[int64_t, ndim=1] partitions = np.empty(n, dtype=np.int64)
    cdef int32_t* slot_view = <int32_t*>cnp.PyArray_DATA(slots)      # (raw pointers: a memoryview costs ~1 us
    cdef int64_t* part_view = <int64_t*>cnp.PyArray_DATA(partitions)  # to acquire, a third of a 100-member call)
    if flat_n == 0:   # every claim compact (or none): the reader's buffers are the answer
        if n:
            memcpy(slot_view, compact.slots, n * sizeof(int32_t))
            memcpy(part_view, compact.parts, n * sizeof(int64_t))
        return offsets, slots, partitions, bad_compact
    # the pairs form's claims, gathered into one array of borrowed pointers (the lists keep them alive), then
    # AHEAD pointers to a well-formed claim that is never read as one: prefetches ahead need no bounds check
    cdef _PairsFlat refs = _PairsFlat(flat_n)
    cdef PyObject** flat = refs.items
    cdef PyObject** src
    j = 0
    for m in range(stop):
        if compact_of[m]:
            continue
        raw = PyList_GET_ITEM(per_member, m)
        size = KG_TUPLE_SIZE(raw)
        if size != off[m + 1] - off[m]:
            # pass 1 ran user code (a Mapping's items(), an iterable's tuple(), a compact container's
            # conversion) that changed a list counted before it: flat and the output arrays are sized by the
            # counts, so refuse rather than overrun them
            raise RuntimeError(f"member #{m}'s owned claims changed while they were read "
                               f"({off[m + 1] - off[m]} claims, then {size})")
        if size:
            src = KG_LIST_ITEMS(<object>raw) if KG_TYPE(raw) == KG_LIST_TYPE else KG_TUPLE_ITEMS(<object>raw)
            memcpy(&flat[j], src, size * sizeof(PyObject*))
            j += size
    for k in range(AHEAD):
        flat[flat_n + k] = <PyObject*>_PAD_CLAIM
    if not any_compact:   # every claim is in flat, in output order
        bad = _read_pairs(refs, 0, flat_n, 0, compact, slot_view, part_view)
    else:                 # pairs from flat, compact claims from the reader's buffers, member by member
        bad = -1
        j = 0
        for m in range(stop):
            size = off[m + 1] - off[m]
            if not size:
                continue
            if compact_of[m]:
                memcpy(&slot_view[off[m]], &compact.slots[c], size * sizeof(int32_t))
                memcpy(&part_view[off[m]], &compact.parts[c], size * sizeof(int64_t))
                c += size
            else:
                bad = _read_pairs(refs, j, size, off[m], compact, slot_view, part_view)
                if bad >= 0:
                    break
                j += size
    return offsets, slots, partitions, bad if bad >= 0 else bad_compact


cdef tuple _PAD_CLAIM = ("", 0)   # what flat holds past its claims (only ever prefetched)


@cython.final
cdef class _PairsFlat:
    """The pairs form's claims as one array of borrowed pointers (items[0..n), then AHEAD pads), freed with it.
    Borrowed, they stay valid only while no user code runs: before pass 2 runs any (hold), it takes a
    reference to every claim not yet read, dropped here, so that a claim user code drops from its list
    meanwhile is still the object gathered."""
    cdef PyObject** items
    cdef Py_ssize_t n
    cdef Py_ssize_t held_from   # -1, or the first claim referenced (items[held_from..n) are)

    def __cinit__(self, Py_ssize_t n):
        self.items = <PyObject**>malloc((n + AHEAD) * sizeof(PyObject*))
        if self.items is NULL:
            raise MemoryError()
        self.n = n
        self.held_from = -1

    def __dealloc__(self):
        cdef Py_ssize_t k
        if self.held_from >= 0:
            for k in range(self.held_from, self.n):
                Py_XDECREF(self.items[k])
        free(self.items)

    cdef int hold(self, Py_ssize_t f) except -1:
        """References to claims f.. (once; those before f are read): call it before running user code."""
        cdef Py_ssize_t k
        if self.held_from < 0:
            for k in range(f, self.n):
                Py_XINCREF(self.items[k])
            self.held_from = f
        return 0


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


cdef Py_ssize_t _read_pairs(_PairsFlat refs, Py_ssize_t base, Py_ssize_t count, Py_ssize_t i,
                            _CompactReader reader, int32_t* slot_view, int64_t* part_view) except -2:
    """Pairs-form claims refs.items[base..base + count) into entries i.. : -1, or the first bad claim's entry
    index. The items hold AHEAD readable pointers past their end (prefetched, never read as claims). Before
    anything that may run user code, refs.hold() takes references to the claims not yet read."""
    cdef PyObject** flat = refs.items + base
    cdef dict slot = reader.slot
    cdef _ByAddress by_address = reader.by_address
    cdef Py_ssize_t f
    cdef PyObject* claim
    cdef PyObject* ahead
    cdef PyObject* t
    cdef PyObject* item
    cdef PyObject* found
    cdef PyObject* last_topic = NULL      # the tuple claims' topic before, and its slot
    cdef int32_t last_slot = -1, c
    cdef long long value = 0   # (set on every path that reaches its use)
    cdef object pair, topic
    # claims name the same few topics over and over, mostly as the very same str objects: their slot is
    # looked up by address first (a few ns), by the dict once per distinct object
    for f in range(count):
        KG_PREFETCH(flat[f + AHEAD])
        ahead = flat[f + AHEAD // 2]
        if KG_TYPE(ahead) == KG_TUPLE_TYPE and KG_TUPLE_SIZE(ahead) == 2:
            KG_PREFETCH(KG_TUPLE_ITEM(ahead, 1))
        claim = flat[f]
        if (KG_TYPE(claim) == KG_TUPLE_TYPE and KG_TUPLE_SIZE(claim) == 2
                and KG_TYPE(KG_TUPLE_ITEM(claim, 0)) == KG_UNICODE_TYPE):
            # (borrowed pointers throughout: the tuple holds its items for the whole call)
            t = KG_TUPLE_ITEM(claim, 0)
            item = KG_TUPLE_ITEM(claim, 1)
            if not kg_small_int(item, &value):
                if KG_TYPE(item) != KG_LONG_TYPE:   # (a numpy integer's __int__, isinstance's __class__)
                    refs.hold(base + f)
                if not _partition_value(<object>item, &value):
                    return i
            # (only a tuple claim's topic is cached by address: the tuple holds it for the whole call, so its
            # address names this string throughout; a member's claims mostly repeat the topic of the claim
            # before, which is checked first)
            if t != last_topic:
                c = by_address.find(t)
                if c == ABSENT:   # looked up by name (once per distinct str object)
                    if not reader._lookup_runs_no_code():
                        refs.hold(base + f)   # (a str subclass key's __eq__ may run)
                    c = _topic_slot(t, slot, by_address)
                last_topic, last_slot = t, c
            c = last_slot
        else:
            # another sequence (its items may be made afresh on each read, and freed after), or a topic that is
            # a str subclass (its own __eq__ / __hash__): the topic is looked up by name
            refs.hold(base + f)
            pair = _pair(<object>claim)
            if pair is None:
                return i
            topic = <object>PyTuple_GET_ITEM(pair, 0)
            if not isinstance(topic, str) or not _partition_value(<object>PyTuple_GET_ITEM(pair, 1), &value):
                return i
            found = PyDict_GetItem(slot, topic)
            c = -1 if found is NULL else <int32_t><object>found
        slot_view[i] = c
        part_view[i] = value
        i += 1
    return -1


DEF NOT_PLAIN = -3      # _CompactReader._plain's answer: the member is read by the general path


@cython.final
cdef class _CompactReader:
    """Compact members' claims, read member by member into growable buffers (slots, parts: claim n on).

    A member whose containers are all sets, frozensets, lists or tuples of exact ints that fit one digit
    (|p| < 2^30), under exact str topics, is read by _plain: its dict walked once, then its containers, then
    its items, each stage prefetching what the next reads (a large group's sets and ints are scattered over
    the heap: the misses, not the instructions, are what it costs), and no user code runs meanwhile, so
    borrowed pointers stay valid. Anything else (a bool, a big or numpy integer, a range, a str subclass, a
    bad claim) makes it read again from its start by _general, which holds references, may run user code
    (conversions, __index__) and words nothing: it reports the first bad claim's index."""
    cdef int32_t* slots
    cdef int64_t* parts
    cdef Py_ssize_t n, capacity
    cdef kg_member_scratch scratch   # one member's topics, containers and items (kg_gather_member)
    cdef dict slot
    cdef _ByAddress by_address
    cdef int plain_slot_keys   # -1: not yet known; 1: every key of slot is an exact str (_lookup_runs_no_code)

    def __cinit__(self, dict slot, object seed):
        self.slot = slot
        self.by_address = _ByAddress()
        self.by_address.seed(seed)
        # user code may run during the call (conversions, __int__, a str subclass's __eq__): a topic cached by
        # address is kept alive, so that its address never names another str (seed's names are the caller's)
        self.by_address.hold(False)
        self.plain_slot_keys = -1
        memset(&self.scratch, 0, sizeof(self.scratch))

    cdef bint _lookup_runs_no_code(self) except -1:
        """Whether looking an exact str up in slot runs no Python code: when every key is an exact str (a str
        subclass key's own __eq__ runs on a hash match). Found once per call, when first needed."""
        if self.plain_slot_keys < 0:
            self.plain_slot_keys = exact_str_keys(self.slot)
        return self.plain_slot_keys == 1

    def __dealloc__(self):
        free(self.slots)
        free(self.parts)
        kg_scratch_free(&self.scratch)

    cdef int _room(self, Py_ssize_t more) except -1:
        """Buffers for `more` claims past n."""
        cdef Py_ssize_t want = self.n + more, capacity
        cdef void* grown
        if want <= self.capacity:
            return 0
        capacity = max(2 * self.capacity, want, 1024)
        grown = realloc(self.slots, capacity * sizeof(int32_t))
        if grown is NULL:
            raise MemoryError()
        self.slots = <int32_t*>grown
        grown = realloc(self.parts, capacity * sizeof(int64_t))
        if grown is NULL:
            raise MemoryError()
        self.parts = <int64_t*>grown
        self.capacity = capacity
        return 0

    cdef Py_ssize_t read(self, dict claims) except -2:
        """One member's compact claims appended at n: -1, or (n then counts the claims before it) the index
        of its first bad claim within the member."""
        cdef Py_ssize_t start = self.n, got = self._plain(claims)   # (the usual member)
        if got != NOT_PLAIN:
            return got
        self.n = start
        return self._general(claims, start)

    cdef Py_ssize_t _plain(self, dict claims) except -2:
        cdef Py_ssize_t entries = 0, e
        cdef Py_ssize_t items = kg_gather_member(<PyObject*>claims, &self.scratch, &entries)
        cdef int32_t c
        if items < 0:
            if items == KG_NO_MEMORY:
                raise MemoryError()
            return NOT_PLAIN
        if self.scratch.unknown:   # topics not where the member before had them: their slots looked up
            for e in range(entries):
                if self.scratch.sizes[e] and self.scratch.slots[e] == KG_SLOT_UNKNOWN:
                    c = self.by_address.find(self.scratch.topics[e])
                    if c == ABSENT:   # looked up by name (once per distinct str object)
                        if not self._lookup_runs_no_code():
                            # the lookup may run a str subclass key's __eq__, which may change or free what
                            # the gather borrowed: the general path reads the member, holding references
                            return NOT_PLAIN
                        c = _topic_slot(self.scratch.topics[e], self.slot, self.by_address)
                    self.scratch.slots[e] = c
                    if e < KG_POSITIONS:
                        self.scratch.known_topic[e] = self.scratch.topics[e]
                        self.scratch.known_slot[e] = c
        if items > self.capacity - self.n:
            self._room(items)
        # (no Python code has run since the gather: its borrowed pointers hold)
        if kg_read_member(&self.scratch, entries, &self.slots[self.n], &self.parts[self.n]) < 0:
            return NOT_PLAIN
        self.n += items
        return -1

    cdef Py_ssize_t _general(self, dict claims, Py_ssize_t start) except -2:
        """Any compact member, from its start: each topic's container converted (_compact_parts), held, then
        read; -1, or the index of its first bad claim within the member."""
        cdef list entries = []
        cdef object topic, parts
        for topic, parts in claims.items():
            parts = _compact_parts(parts)
            entries.append((topic, parts))
            if parts is None:
                break
        for topic, parts in entries:
            if not self._topic(topic, parts):
                return self.n - start
        return -1

    cdef bint _topic(self, object topic, object parts) except -1:
        """One topic's claims appended; False (n at the bad claim) when one is not (str, int)."""
        cdef Py_ssize_t count, k, end
        cdef int32_t topic_slot
        cdef long long value
        cdef int64_t[::1] arr
        cdef object partition
        cdef Py_ssize_t pos = 0
        cdef PyObject* item
        cdef PyObject* found
        cdef Py_hash_t hash_
        if parts is None:
            return False
        if type(parts) is frozenset or type(parts) is set:
            count = PySet_GET_SIZE(parts)
        else:
            count = len(parts)
        if count == 0:
            return True
        if type(topic) is str:   # (cached by address: the member's dict holds the str for the whole call)
            topic_slot = _topic_slot(<PyObject*>topic, self.slot, self.by_address)
        elif isinstance(topic, str):   # a str subclass: by name (its own __eq__ / __hash__ may run)
            found = PyDict_GetItem(self.slot, topic)
            topic_slot = -1 if found is NULL else <int32_t><object>found
        else:
            return False
        self._room(count)
        end = self.n + count
        if type(parts) is frozenset or type(parts) is set:
            # _PySet_NextEntry: the set's own order, as `for p in parts` gives it, without an iterator object.
            # (an item's __index__ may change the set: never more than `count` items are written)
            while _PySet_NextEntry(parts, &pos, &item, &hash_):
                partition = <object>item       # (a reference held while it is read)
                if self.n == end:
                    raise RuntimeError(f"the owned partitions of topic {topic!r} changed while they were read")
                if not _partition_value(partition, &value):
                    return False
                self.slots[self.n] = topic_slot
                self.parts[self.n] = value
                self.n += 1
            return True
        if isinstance(parts, np.ndarray):
            arr = parts
            for k in range(count):
                self.slots[self.n] = topic_slot
                self.parts[self.n] = arr[k]
                self.n += 1
            return True
        for k in range(count):
            if k >= KG_TUPLE_SIZE(<PyObject*>parts):   # (a list an item's __index__ shortened: ob_size of either)
                raise RuntimeError(f"the owned partitions of topic {topic!r} changed while they were read")
            partition = <object>(PyList_GET_ITEM(parts, k) if type(parts) is list else PyTuple_GET_ITEM(parts, k))
            if not _partition_value(partition, &value):
                return False
            self.slots[self.n] = topic_slot
            self.parts[self.n] = value
            self.n += 1
        return True
