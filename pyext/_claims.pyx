# cython: language_level=3, boundscheck=False, wraparound=False, initializedcheck=False
"""kafkagroup._claims: members' owned-partition claims, given as Python (topic, partition) pairs, to arrays.

Called by kafkagroup.model.build_group, which owns every rule (which claims count, which are errors, what
the messages say); this module only converts. A 1M-claim group spends ~1 s in a Python loop over the
pairs and ~60 ms here: one dict lookup and one integer read per claim, no object created per claim.

intern_claims(owned, slot) -> (offsets int64[M+1], slots int32[n], partitions int64[n], bad)
    owned: one sequence of claims per member (tuples, TopicPartitions, or any 2-item sequence)
    slot:  topic name -> int32 slot chosen by the caller; a name not in it gets slot -1
    bad:   index (into the flattened claims) of the first claim that is not a (str, int) pair; -1 when
           every claim is well-formed. The caller re-reads that claim to word the error. Nothing else
           returned is meaningful when bad >= 0.
    A partition number outside int64 is returned as -1 (out of range for every topic, as it is).
"""
import numpy as np
cimport numpy as cnp
from libc.stdint cimport int32_t, int64_t, uintptr_t
from libc.stdlib cimport calloc, free
from cpython.dict cimport PyDict_GetItem
from cpython.object cimport PyObject
from cpython.long cimport PyLong_AsLongLongAndOverflow
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE

cnp.import_array()

include "address_table.pxi"


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


def intern_claims(list owned, dict slot):
    cdef Py_ssize_t members = len(owned), m, n = 0, i = 0
    cdef cnp.ndarray[int64_t, ndim=1] offsets = np.zeros(members + 1, dtype=np.int64)
    cdef list per_member = [None] * members
    for m in range(members):
        claims = owned[m]
        if not isinstance(claims, (list, tuple)):
            claims = list(claims)
        per_member[m] = claims
        n += len(claims)
    cdef cnp.ndarray[int32_t, ndim=1] slots = np.empty(n, dtype=np.int32)
    cdef cnp.ndarray[int64_t, ndim=1] partitions = np.empty(n, dtype=np.int64)
    cdef int32_t[::1] slot_view = slots
    cdef int64_t[::1] part_view = partitions
    cdef object pair, topic, partition
    cdef PyObject* found
    cdef int overflow
    cdef long long value
    cdef int32_t c
    # claims name the same few topics over and over, mostly as the very same str objects: their slot is
    # looked up by address first (a few ns), by the dict once per distinct object
    cdef _ByAddress by_address = _ByAddress()
    for m in range(members):
        for claim in per_member[m]:
            pair = _pair(claim)
            if pair is None:
                return offsets, slots, partitions, i
            topic = <object>PyTuple_GET_ITEM(pair, 0)
            partition = <object>PyTuple_GET_ITEM(pair, 1)
            if type(topic) is not str:
                return offsets, slots, partitions, i
            # bool is an int subclass but not a partition number; numpy integers are accepted.
            if type(partition) is int:
                value = PyLong_AsLongLongAndOverflow(partition, &overflow)
                if overflow:
                    value = -1
            elif isinstance(partition, np.integer):
                value = PyLong_AsLongLongAndOverflow(int(partition), &overflow)
                if overflow:
                    value = -1
            else:
                return offsets, slots, partitions, i
            # (only a tuple claim's topic is cached: the tuple holds it for the whole call, so its address
            # names this string throughout; another sequence's item may be made afresh and freed)
            c = by_address.find(<PyObject*>topic) if pair is claim else ABSENT
            if c == ABSENT:
                found = PyDict_GetItem(slot, topic)
                c = -1 if found is NULL else <int32_t><object>found
                if pair is claim:
                    by_address.put(<PyObject*>topic, c)
            slot_view[i] = c
            part_view[i] = value
            i += 1
        offsets[m + 1] = i
    return offsets, slots, partitions, -1
