// kafkagroup._core: pybind11 glue over the C++ engine in csrc/. Converts numpy arrays to views,
// releases the GIL around the engine, hands owner[] back as a numpy array without a copy, and maps
// the engine's error channel (DESIGN.md convention 4): std::invalid_argument (bad input) to
// kafkagroup.errors.InvalidGroupError, any other std::logic_error (a broken engine invariant) to
// kafkagroup.errors.InvariantError. No assignment logic lives here.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <initializer_list>
#include <memory>
#include <optional>
#include <stdexcept>

#include "kafkagroup/batch.hpp"
#include "kafkagroup/engine.hpp"
#include "kafkagroup/arrow_export.hpp"
#include "kafkagroup/group_builder.hpp"
#include "kafkagroup/metrics_rows.hpp"
#include "kafkagroup/output_rows.hpp"
#include "kafkagroup/output_memory.hpp"
#include "kafkagroup/plan_batch.hpp"

namespace py = pybind11;
using namespace kafkagroup;

namespace {

template <class T>
using Array = py::array_t<T, py::array::c_style | py::array::forcecast>;

template <class T>
View<T> view_of(const std::optional<Array<T>>& a, const char* name) {
    if (!a) return {};
    if (a->ndim() != 1) throw std::invalid_argument(std::string(name) + ": expected a 1-d array");
    return View<T>{a->data(), static_cast<std::size_t>(a->size())};
}

// Buffers the engine hands to numpy are freed when numpy drops them, i.e. with the GIL held. Freeing a
// large one can hand memory back to the OS (glibc unmaps a large block, or trims the heap top once a freed
// chunk of >= 64 KB joins it: ~0.1-0.3 us per 4 KB page, ~5% of the fleet loop's CPU at 10,000 small
// groups), so those are freed with the GIL released and other threads' batches go on meanwhile. Below
// this size releasing and retaking the GIL costs more than the free can.
constexpr std::size_t kFreeWithoutGilBytes = 64 * 1024;

template <class Owned>
[[gnu::noinline]] void free_without_gil(Owned* owned) {   // not inlined: profiles show the released frees
    py::gil_scoped_release release;
    delete owned;
}

template <class Owned>
void free_owned(Owned* owned, std::size_t bytes) {
    if (bytes >= kFreeWithoutGilBytes && PyGILState_Check())
        free_without_gil(owned);
    else
        delete owned;
}

// Moves a vector into a numpy array that owns it (no copy of the data).
py::array_t<int32_t> to_numpy(std::vector<int32_t>&& v) {
    auto* heap = new std::vector<int32_t>(std::move(v));
    py::capsule owner(heap, [](void* p) {
        auto* v = static_cast<std::vector<int32_t>*>(p);
        free_owned(v, v->capacity() * sizeof(int32_t));
    });
    return py::array_t<int32_t>({static_cast<py::ssize_t>(heap->size())}, {sizeof(int32_t)}, heap->data(), owner);
}

py::dict metrics_dict(const Metrics& m) {
    py::dict d;
    d["balance_gap"] = m.balance_gap;
    d["max_load"] = m.max_load;
    d["min_load"] = m.min_load;
    d["assigned"] = m.assigned;
    d["unassigned"] = m.unassigned;
    d["withheld"] = m.withheld;
    d["moved"] = m.moved;
    d["moved_lower_bound"] = m.moved_lower_bound;
    return d;
}

// The compact problem's nine arrays as views, into a Problem or a GroupBatch (the same field names).
template <class Target>
void set_problem_views(Target& out, const Array<int32_t>& partition_count, const Array<int64_t>& sub_offsets,
                       const Array<int32_t>& sub_topics, const std::optional<Array<int64_t>>& owned_offsets,
                       const std::optional<Array<int32_t>>& owned_partitions,
                       const std::optional<Array<int32_t>>& generation,
                       const std::optional<Array<int32_t>>& member_rack,
                       const std::optional<Array<int64_t>>& replica_offsets,
                       const std::optional<Array<int32_t>>& replica_racks) {
    out.partition_count = view_of<int32_t>(partition_count, "partition_count");
    out.sub_offsets = view_of<int64_t>(sub_offsets, "sub_offsets");
    out.sub_topics = view_of<int32_t>(sub_topics, "sub_topics");
    out.owned_offsets = view_of(owned_offsets, "owned_offsets");
    out.owned_partitions = view_of(owned_partitions, "owned_partitions");
    out.generation = view_of(generation, "generation");
    out.member_rack = view_of(member_rack, "member_rack");
    out.replica_offsets = view_of(replica_offsets, "replica_offsets");
    out.replica_racks = view_of(replica_racks, "replica_racks");
}

py::tuple assign_arrays(const std::string& strategy, const Array<int32_t>& partition_count,
                        const Array<int64_t>& sub_offsets, const Array<int32_t>& sub_topics,
                        const std::optional<Array<int64_t>>& owned_offsets,
                        const std::optional<Array<int32_t>>& owned_partitions,
                        const std::optional<Array<int32_t>>& generation,
                        const std::optional<Array<int32_t>>& member_rack,
                        const std::optional<Array<int64_t>>& replica_offsets,
                        const std::optional<Array<int32_t>>& replica_racks) {
    Problem problem;
    set_problem_views(problem, partition_count, sub_offsets, sub_topics, owned_offsets, owned_partitions, generation,
                      member_rack, replica_offsets, replica_racks);
    AssignResult result;
    {
        py::gil_scoped_release release;
        result = assign(strategy, problem);
    }
    return py::make_tuple(to_numpy(std::move(result.owner)), to_numpy(std::move(result.withheld)),
                          metrics_dict(result.metrics));
}

// A view of `h` when it is None (empty view) or already a 1-d, C-contiguous numpy array of exactly T;
// false otherwise (the caller converts and calls again). No conversion, no new reference.
template <class T>
bool exact_view(py::handle h, View<T>& out) {
    if (h.is_none()) return out = View<T>{}, true;
    if (!py::array_t<T, py::array::c_style>::check_(h)) return false;
    const auto a = py::reinterpret_borrow<py::array>(h);
    if (a.ndim() != 1) return false;
    out = View<T>{static_cast<const T*>(a.data()), static_cast<std::size_t>(a.size())};
    return true;
}

// kafkagroup.engine's ArrayResult and Metrics (frozen dataclasses), registered by engine.py when it is
// imported (set_result_types); assign_exact fills them without calling their generated __init__, which
// sets each field through object.__setattr__. Never released: they live as long as the interpreter.
struct ResultTypes {
    PyTypeObject* array_result = nullptr;
    PyTypeObject* metrics = nullptr;
    PyObject* empty_args = nullptr;
    PyObject* result_keys[4] = {};   // ArrayResult's fields, in declaration order
    PyObject* metric_keys[kMetricCount] = {};
};
ResultTypes g_types;

void set_result_types(py::handle array_result, py::handle metrics) {
    if (!PyType_Check(array_result.ptr()) || !PyType_Check(metrics.ptr()))
        throw py::type_error("set_result_types: expected the ArrayResult and Metrics classes");
    const auto names = [](py::handle cls) {
        std::vector<std::string> out;
        for (py::handle f : py::module_::import("dataclasses").attr("fields")(cls)) out.push_back(py::str(f.attr("name")));
        return out;
    };
    const std::vector<std::string> result_fields = names(array_result), metric_fields = names(metrics),
                                   expected = {"owner", "withheld", "metrics", "engine_us"};
    if (result_fields != expected || metric_fields != metric_names())
        throw py::type_error("set_result_types: ArrayResult or Metrics fields differ from the engine's");
    for (std::size_t i = 0; i < 4; ++i) g_types.result_keys[i] = PyUnicode_InternFromString(expected[i].c_str());
    for (std::size_t i = 0; i < kMetricCount; ++i) g_types.metric_keys[i] = PyUnicode_InternFromString(metric_fields[i].c_str());
    g_types.empty_args = PyTuple_New(0);
    Py_INCREF(array_result.ptr());
    Py_INCREF(metrics.ptr());
    g_types.array_result = reinterpret_cast<PyTypeObject*>(array_result.ptr());
    g_types.metrics = reinterpret_cast<PyTypeObject*>(metrics.ptr());
}

// An instance of the frozen dataclass `type` with fields keys[i] = values[i] (the values are stolen references),
// made as object.__new__ and the generated __init__ make it: object.__setattr__ per field, which with the
// class's managed dict (CPython 3.11+) stores into the instance's inline values in declaration order, the
// order __init__ uses, so no dict is built (filling a __dict__ made per instance was a fifth of a 100-partition
// call, its resizes and its deallocation included).
py::object frozen_instance(PyTypeObject* type, PyObject* const* keys, std::initializer_list<PyObject*> values) {
    std::vector<py::object> owned;
    owned.reserve(values.size());
    for (PyObject* v : values) owned.push_back(py::reinterpret_steal<py::object>(v));
    for (const py::object& v : owned)
        if (!v) throw py::error_already_set();
    auto obj = py::reinterpret_steal<py::object>(type->tp_new(type, g_types.empty_args, nullptr));
    if (!obj) throw py::error_already_set();
    for (std::size_t i = 0; i < owned.size(); ++i)
        if (PyObject_GenericSetAttr(obj.ptr(), keys[i], owned[i].ptr()) != 0) throw py::error_already_set();
    return obj;
}

// A 1-d int32 numpy array over v's buffer (no copy; a capsule that owns the vector is its base, freed as
// free_owned says), made through numpy's C API: pybind11's array constructor builds a dtype object and
// heap-allocated shape and stride lists per array. An empty vector with no buffer becomes numpy's own
// empty array (no capsule).
py::object numpy_of(std::vector<int32_t>&& v) {
    const auto& api = py::detail::npy_api::get();
    Py_intptr_t size = static_cast<Py_intptr_t>(v.size());
    PyObject* descr = api.PyArray_DescrFromType_(py::detail::npy_api::NPY_INT32_);
    if (!descr) throw py::error_already_set();
    if (v.capacity() == 0) {   // (NewFromDescr steals descr)
        auto empty = py::reinterpret_steal<py::object>(
            api.PyArray_NewFromDescr_(api.PyArray_Type_, descr, 1, &size, nullptr, nullptr, 0, nullptr));
        if (!empty) throw py::error_already_set();
        return empty;
    }
    auto* heap = new std::vector<int32_t>(std::move(v));
    PyObject* capsule = PyCapsule_New(heap, nullptr, [](PyObject* c) {
        auto* owned = static_cast<std::vector<int32_t>*>(PyCapsule_GetPointer(c, nullptr));
        free_owned(owned, owned->capacity() * sizeof(int32_t));
    });
    if (!capsule) {
        delete heap;
        Py_DECREF(descr);
        throw py::error_already_set();
    }
    auto array = py::reinterpret_steal<py::object>(api.PyArray_NewFromDescr_(
        api.PyArray_Type_, descr, 1, &size, nullptr, heap->data(), py::detail::npy_api::NPY_ARRAY_WRITEABLE_, nullptr));
    if (!array) {
        Py_DECREF(capsule);
        throw py::error_already_set();
    }
    if (api.PyArray_SetBaseObject_(array.ptr(), capsule) != 0) throw py::error_already_set();   // (steals capsule)
    return array;
}

// assign() for arrays already in the engine's layout: the whole of kafkagroup.assign_arrays' usual call.
// Positional arguments (no keyword matching), no forcecast conversion, the result objects made here.
// Returns None when the strategy is not a str or some argument is not an exact array (engine.assign_arrays
// then checks and converts, with its range checks and messages, and calls again).
py::object assign_exact(py::handle strategy, py::handle partition_count, py::handle sub_offsets,
                        py::handle sub_topics, py::handle owned_offsets, py::handle owned_partitions,
                        py::handle generation, py::handle member_rack, py::handle replica_offsets,
                        py::handle replica_racks, int64_t shared_members, bool server_racks, bool with_metrics) {
    if (!g_types.array_result) throw std::logic_error("assign_exact: kafkagroup.engine has not registered its result types");
    Problem problem;
    problem.shared_members = shared_members;
    AssignOptions options;
    options.server_racks = server_racks;
    options.metrics = with_metrics;
    if (!PyUnicode_Check(strategy.ptr())) return py::none();
    Py_ssize_t name_size = 0;
    const char* name = PyUnicode_AsUTF8AndSize(strategy.ptr(), &name_size);  // cached in the str, no copy
    if (!name) throw py::error_already_set();
    // The homogeneous form may leave sub_offsets None: its one row's offsets are {0, len(sub_topics)}.
    const bool shared_row = shared_members >= 0 && sub_offsets.is_none();
    if (partition_count.is_none() || (sub_offsets.is_none() && !shared_row) || sub_topics.is_none()) return py::none();
    if (!exact_view(partition_count, problem.partition_count) || !exact_view(sub_offsets, problem.sub_offsets) ||
        !exact_view(sub_topics, problem.sub_topics) || !exact_view(owned_offsets, problem.owned_offsets) ||
        !exact_view(owned_partitions, problem.owned_partitions) || !exact_view(generation, problem.generation) ||
        !exact_view(member_rack, problem.member_rack) || !exact_view(replica_offsets, problem.replica_offsets) ||
        !exact_view(replica_racks, problem.replica_racks))
        return py::none();
    int64_t row_offsets[2] = {0, static_cast<int64_t>(problem.sub_topics.size)};
    if (shared_row) problem.sub_offsets = View<int64_t>{row_offsets, 2};
    AssignResult result;
    double engine_us = 0;
    {
        py::gil_scoped_release release;
        const auto start = std::chrono::steady_clock::now();
        result = assign(std::string_view(name, static_cast<std::size_t>(name_size)), problem, options);
        engine_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    }
    const Metrics& m = result.metrics;
    py::object metrics = py::none();   // (not asked for: the engine left them at their defaults)
    if (with_metrics)
        metrics = frozen_instance(
            g_types.metrics, g_types.metric_keys,
            {PyLong_FromLongLong(m.balance_gap), PyLong_FromLongLong(m.max_load), PyLong_FromLongLong(m.min_load),
             PyLong_FromLongLong(m.assigned), PyLong_FromLongLong(m.unassigned), PyLong_FromLongLong(m.withheld),
             PyLong_FromLongLong(m.moved), PyLong_FromLongLong(m.moved_lower_bound)});
    return frozen_instance(g_types.array_result, g_types.result_keys,
                           {numpy_of(std::move(result.owner)).release().ptr(),
                            numpy_of(std::move(result.withheld)).release().ptr(), metrics.release().ptr(),
                            PyFloat_FromDouble(engine_us)});
}

// kafkagroup.errors' InvalidGroupError and InvariantError, set when the module is initialised. Released
// (never decref'd): the classes live as long as the interpreter.
PyObject* g_invalid_group_error = nullptr;
PyObject* g_invariant_error = nullptr;

// The module's mapping of the engine's C++ exceptions (the translator in PYBIND11_MODULE and assign_exact's
// fast-call entry): bad input (std::invalid_argument) -> InvalidGroupError, another std::logic_error (a broken
// invariant) -> InvariantError; anything else is rethrown for the caller to map.
void set_engine_error(std::exception_ptr p) {
    try {
        std::rethrow_exception(p);
    } catch (const std::invalid_argument& e) {
        PyErr_SetString(g_invalid_group_error, e.what());
    } catch (const std::logic_error& e) {
        PyErr_SetString(g_invariant_error, e.what());
    }
}

// Builder errors as Python reads them: [(group, code, a, b, c)].
py::list build_error_list(const std::vector<BuildError>& errors) {
    py::list out;
    for (const BuildError& e : errors) out.append(py::make_tuple(e.group, static_cast<int>(e.code), e.a, e.b, e.c));
    return out;
}

// Engine errors as Python reads them: [(group, kind, message)].
py::list engine_error_list(const std::vector<GroupError>& errors) {
    py::list out;
    for (const GroupError& e : errors) out.append(py::make_tuple(e.group, static_cast<int>(e.kind), e.message));
    return out;
}

// _core.assign_exact as a plain METH_FASTCALL function: the arguments are handed on as they are (positional
// only), without pybind11's dispatcher (its argument vectors and overload loop were ~7% of a 100-partition
// call). Exceptions map as the module's translator maps them (PYBIND11_MODULE below), the rest as pybind11's.
PyObject* assign_exact_fastcall(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
    try {
        if (nargs < 10 || nargs > 13) {
            PyErr_Format(PyExc_TypeError, "assign_exact() takes 10 to 13 positional arguments (%zd given)", nargs);
            return nullptr;
        }
        int64_t shared_members = -1;
        bool server_racks = false, with_metrics = true;
        if (nargs > 10) {
            shared_members = PyLong_AsLongLong(args[10]);
            if (shared_members == -1 && PyErr_Occurred()) return nullptr;
        }
        if (nargs > 11) {
            const int truth = PyObject_IsTrue(args[11]);
            if (truth < 0) return nullptr;
            server_racks = truth != 0;
        }
        if (nargs > 12) {
            const int truth = PyObject_IsTrue(args[12]);
            if (truth < 0) return nullptr;
            with_metrics = truth != 0;
        }
        return assign_exact(args[0], args[1], args[2], args[3], args[4], args[5], args[6], args[7], args[8], args[9],
                            shared_members, server_racks, with_metrics)
            .release()
            .ptr();
    } catch (py::error_already_set& e) {
        e.restore();
    } catch (const std::logic_error&) {   // (std::invalid_argument among them)
        set_engine_error(std::current_exception());
    } catch (const std::bad_alloc&) {
        PyErr_NoMemory();
    } catch (const std::exception& e) {
        PyErr_SetString(PyExc_RuntimeError, e.what());
    }
    return nullptr;
}

PyMethodDef g_assign_exact_def = {
    "assign_exact", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(assign_exact_fastcall)), METH_FASTCALL,
    "assign_exact(strategy, partition_count, sub_offsets, sub_topics, owned_offsets, owned_partitions, generation,\n"
    "member_rack, replica_offsets, replica_racks, shared_members=-1, server_racks=False, metrics=True), positional\n"
    "only.\n"
    "assign() for exact arrays (1-d, C-contiguous, the documented dtypes) or None;\n"
    "shared_members: -1, or the member count of the homogeneous form (Problem::shared_members);\n"
    "server_racks: AssignOptions::server_racks; metrics: AssignOptions::metrics (False: the result's metrics is None).\n"
    "Returns kafkagroup.engine.ArrayResult (engine_us: the engine alone), or None when the strategy is not\n"
    "a str or some argument is not an exact array (nothing was run: convert and call again)."};

// ---- many groups per call (csrc/kafkagroup/batch.hpp)

// Moves a vector into a numpy array of the given shape that owns it (no copy of the data).
template <class T>
py::array_t<T> owned_array(std::vector<T>&& v, std::vector<py::ssize_t> shape) {
    auto* heap = new std::vector<T>(std::move(v));
    py::capsule owner(heap, [](void* p) {
        auto* v = static_cast<std::vector<T>*>(p);
        free_owned(v, v->capacity() * sizeof(T));
    });
    return py::array_t<T>(shape, heap->data(), owner);
}

// The [groups, kMetricCount] metrics array over BatchResult's column-major vector (strides, no copy): each
// metric's column metrics[:, k] is contiguous.
py::array_t<int64_t> metrics_array(std::vector<int64_t>&& v, py::ssize_t groups) {
    auto* heap = new std::vector<int64_t>(std::move(v));
    py::capsule owner(heap, [](void* p) {
        auto* v = static_cast<std::vector<int64_t>*>(p);
        free_owned(v, v->capacity() * sizeof(int64_t));
    });
    const auto item = static_cast<py::ssize_t>(sizeof(int64_t));
    return py::array_t<int64_t>({groups, static_cast<py::ssize_t>(kMetricCount)}, {item, item * groups}, heap->data(), owner);
}

template <class T>
py::array_t<T> owned_array(std::vector<T>&& v) {
    const auto n = static_cast<py::ssize_t>(v.size());
    return owned_array(std::move(v), {n});
}

py::tuple assign_batch_arrays(const std::string& strategy, const Array<int64_t>& topic_offsets,
                              const Array<int64_t>& member_offsets, const Array<int32_t>& partition_count,
                              const Array<int64_t>& sub_offsets, const Array<int32_t>& sub_topics,
                              const std::optional<Array<int64_t>>& owned_offsets,
                              const std::optional<Array<int32_t>>& owned_partitions,
                              const std::optional<Array<int32_t>>& generation,
                              const std::optional<Array<int32_t>>& member_rack,
                              const std::optional<Array<int64_t>>& replica_offsets,
                              const std::optional<Array<int32_t>>& replica_racks,
                              const std::optional<Array<uint8_t>>& group_inputs, int threads) {
    GroupBatch batch;
    batch.topic_offsets = view_of<int64_t>(topic_offsets, "topic_offsets");
    batch.member_offsets = view_of<int64_t>(member_offsets, "member_offsets");
    set_problem_views(batch, partition_count, sub_offsets, sub_topics, owned_offsets, owned_partitions, generation,
                      member_rack, replica_offsets, replica_racks);
    batch.group_inputs = view_of(group_inputs, "group_inputs");
    if (threads < 1) throw std::invalid_argument("threads must be >= 1, got " + std::to_string(threads));
    BatchResult r;
    {
        py::gil_scoped_release release;
        r = assign_batch(strategy, batch, threads);
    }
    const auto groups = static_cast<py::ssize_t>(r.engine_us.size());
    py::list errors = engine_error_list(r.errors);
    return py::make_tuple(owned_array(std::move(r.part_offsets)), owned_array(std::move(r.owner)),
                          owned_array(std::move(r.withheld_offsets)), owned_array(std::move(r.withheld)),
                          metrics_array(std::move(r.metrics), groups),
                          owned_array(std::move(r.engine_us)), errors);
}

void bind_batch(py::module_& m) {
    m.def("assign_batch", &assign_batch_arrays, py::arg("strategy"), py::arg("topic_offsets"),
          py::arg("member_offsets"), py::arg("partition_count"), py::arg("sub_offsets"), py::arg("sub_topics"),
          py::arg("owned_offsets") = py::none(), py::arg("owned_partitions") = py::none(),
          py::arg("generation") = py::none(), py::arg("member_rack") = py::none(),
          py::arg("replica_offsets") = py::none(), py::arg("replica_racks") = py::none(),
          py::arg("group_inputs") = py::none(), py::arg("threads") = 1,
          "Assign G groups laid end to end in one call (GIL released). Returns (part_offsets int64[G+1],\n"
          "owner int32[P], withheld_offsets int64[G+1], withheld int32[W], metrics int64[G, 8],\n"
          "engine_us float64[G], errors [(group, kind, message)]) with kind 1 = invalid input, 2 = invariant.");
    m.def("metric_names", &metric_names, "Column names of assign_batch's metrics array.");
}


// ---- names -> GroupBatch (csrc/kafkagroup/group_builder.hpp)

// A string column from Python: (offsets int64[n+1] or int32[n+1] -- an Arrow string array's own offsets, taken
// as they are --, bytes uint8[], valid uint8[n] or None); the arrays are kept here so the views stay valid for
// the call.
struct StringsArg {
    std::optional<Array<int64_t>> offsets;
    std::optional<Array<int32_t>> offsets32;
    Array<uint8_t> bytes;
    std::optional<Array<uint8_t>> valid;
    std::optional<Array<int32_t>> codes;   // dictionary codes (NameColumn) or None

    static StringsArg from(const py::object& value, const char* name, bool with_codes) {
        const py::tuple t = value.cast<py::tuple>();
        if (t.size() != (with_codes ? 4u : 3u))
            throw std::invalid_argument(std::string(name) + ": expected (offsets, bytes, valid" + (with_codes ? ", codes)" : ")"));
        StringsArg a{std::nullopt, std::nullopt, t[1].cast<Array<uint8_t>>(), std::nullopt, std::nullopt};
        if (py::array_t<int32_t, py::array::c_style>::check_(t[0]))
            a.offsets32 = t[0].cast<Array<int32_t>>();
        else
            a.offsets = t[0].cast<Array<int64_t>>();
        if (!t[2].is_none()) a.valid = t[2].cast<Array<uint8_t>>();
        if (with_codes && !t[3].is_none()) a.codes = t[3].cast<Array<int32_t>>();
        return a;
    }
    StringColumn column(const char* name) const {
        return StringColumn{view_of(offsets, name), view_of<uint8_t>(bytes, name), view_of(valid, name),
                            view_of(offsets32, name)};
    }
    NameColumn names(const char* name) const { return NameColumn{column(name), view_of(codes, name), codes.has_value()}; }
};

std::unique_ptr<TopicCatalog> make_catalog(const py::object& names, const Array<int64_t>& count,
                                           const std::optional<Array<int64_t>>& group,
                                           const std::optional<Array<uint8_t>>& has_racks,
                                           const std::optional<Array<int64_t>>& part_start,
                                           const std::optional<Array<int64_t>>& rack_off,
                                           const std::optional<Array<int32_t>>& rack_codes) {
    const StringsArg n = StringsArg::from(names, "names", false);
    TopicRows rows{n.column("names"), view_of<int64_t>(count, "count"), view_of(group, "group"),
                   view_of(has_racks, "has_racks"), view_of(part_start, "part_start"), view_of(rack_off, "rack_off"),
                   view_of(rack_codes, "rack_codes")};
    py::gil_scoped_release release;
    return std::make_unique<TopicCatalog>(rows);
}

// build_groups' string columns from Python, kept alive for the call, and the NamedGroups viewing them.
struct NamedGroupsArgs {
    StringsArg ids;
    std::optional<StringsArg> instances, owned;
    StringsArg subs;
    NamedGroups in;

    NamedGroupsArgs(const Array<int64_t>& member_offsets, const py::object& member_ids, const py::object& instance_ids,
                    const Array<int64_t>& sub_offsets, const std::optional<Array<uint8_t>>& sub_valid,
                    const py::object& sub_names, const std::optional<Array<int64_t>>& owned_offsets,
                    const py::object& owned_names, const std::optional<Array<int64_t>>& owned_partition,
                    const std::optional<Array<uint8_t>>& owned_partition_valid,
                    const std::optional<Array<int64_t>>& generation, const std::optional<Array<int32_t>>& member_rack,
                    const std::optional<Array<uint8_t>>& sub_same)
        : ids(StringsArg::from(member_ids, "member_ids", false)), subs(StringsArg::from(sub_names, "sub_names", true)) {
        if (!instance_ids.is_none()) instances = StringsArg::from(instance_ids, "instance_ids", false);
        if (!owned_names.is_none()) owned = StringsArg::from(owned_names, "owned_names", true);
        in.member_offsets = view_of<int64_t>(member_offsets, "member_offsets");
        in.member_ids = ids.column("member_ids");
        if (instances) in.instance_ids = instances->column("instance_ids");
        in.sub_offsets = view_of<int64_t>(sub_offsets, "sub_offsets");
        in.sub_valid = view_of(sub_valid, "sub_valid");
        in.sub_same = view_of(sub_same, "sub_same");
        in.sub_names = subs.names("sub_names");
        in.owned_offsets = view_of(owned_offsets, "owned_offsets");
        if (owned) in.owned_names = owned->names("owned_names");
        in.owned_partition = view_of(owned_partition, "owned_partition");
        in.owned_partition_valid = view_of(owned_partition_valid, "owned_partition_valid");
        in.generation = view_of(generation, "generation");
        in.member_rack = view_of(member_rack, "member_rack");
    }
};

// build_groups' result as build_groups_arrays returns it (numpy arrays owning the vectors, 'errors').
void put_built(py::dict& d, BuiltGroups&& b) {
    py::list errors = build_error_list(b.errors);
    d["topic_offsets"] = owned_array(std::move(b.topic_offsets));
    d["member_offsets"] = owned_array(std::move(b.member_offsets));
    d["partition_count"] = owned_array(std::move(b.partition_count));
    d["topic_row"] = owned_array(std::move(b.topic_row));
    d["topic_entries"] = owned_array(std::move(b.topic_entries));
    d["part_offsets"] = owned_array(std::move(b.part_offsets));
    d["member_perm"] = owned_array(std::move(b.member_perm));
    d["sub_offsets"] = owned_array(std::move(b.sub_offsets));
    d["sub_topics"] = owned_array(std::move(b.sub_topics));
    d["owned_offsets"] = owned_array(std::move(b.owned_offsets));
    d["owned_partitions"] = owned_array(std::move(b.owned_partitions));
    d["generation"] = owned_array(std::move(b.generation));
    d["member_rack"] = owned_array(std::move(b.member_rack));
    d["replica_offsets"] = owned_array(std::move(b.replica_offsets));
    d["replica_racks"] = owned_array(std::move(b.replica_racks));
    d["group_inputs"] = owned_array(std::move(b.group_inputs));
    d["unknown_offsets"] = owned_array(std::move(b.unknown_offsets));
    d["unknown_entries"] = owned_array(std::move(b.unknown_entries));
    d["dropped_claims"] = owned_array(std::move(b.dropped_claims));
    d["rack_codes"] = owned_array(std::move(b.rack_codes));
    d["rack_offsets"] = owned_array(std::move(b.rack_offsets));
    d["errors"] = errors;
}

// A counting run 0, 1, ..., n-1 (a permutation or a row list that is the identity).
template <class T>
bool counts_up(const std::vector<T>& v) {
    for (std::size_t i = 0; i < v.size(); ++i)
        if (v[i] != static_cast<T>(i)) return false;
    return true;
}

template <class T>
py::list int_list(const std::vector<T>& v) {
    py::list out(v.size());
    for (std::size_t i = 0; i < v.size(); ++i) out[i] = py::int_(static_cast<int64_t>(v[i]));
    return out;
}

// build_groups' result for a batch of one group, as kafkagroup.model.build_group reads it (lean=True): a tuple
// (errors, inputs, dropped, rows_up, member_perm, topic_row, partition_count, part_offsets, sub_offsets,
//  sub_topics, owned_offsets, owned_partitions, generation, member_rack, replica_offsets, replica_racks,
//  unknown_entries, rack_codes): only the arrays the group uses (an optional input it does not use is None),
// counts as ints, short lists as lists, member_perm None when it is the identity, rows_up whether topic_row is
// 0..n-1. Each numpy array costs ~2.5k instructions and each dict key made from a char* ~1k: the full dict's 21
// arrays were an eighth of a 100-member call (issue 21).
py::tuple lean_built(BuiltGroups&& b) {
    py::list errors = build_error_list(b.errors);
    const int inputs = b.group_inputs.empty() ? 0 : b.group_inputs[0];
    auto optional = [&](int bit, auto&& v) -> py::object {
        if (!(inputs & bit)) return py::none();
        return owned_array(std::move(v));
    };
    const bool rows_up = counts_up(b.topic_row);
    py::object perm = counts_up(b.member_perm) ? py::object(py::none()) : py::object(owned_array(std::move(b.member_perm)));
    return py::make_tuple(errors, inputs, b.dropped_claims.empty() ? 0 : b.dropped_claims[0], rows_up, perm,
                          owned_array(std::move(b.topic_row)), owned_array(std::move(b.partition_count)),
                          owned_array(std::move(b.part_offsets)), owned_array(std::move(b.sub_offsets)),
                          owned_array(std::move(b.sub_topics)), optional(kInputOwned, std::move(b.owned_offsets)),
                          optional(kInputOwned, std::move(b.owned_partitions)),
                          optional(kInputGeneration, std::move(b.generation)),
                          optional(kInputMemberRack, std::move(b.member_rack)),
                          optional(kInputReplicaRacks, std::move(b.replica_offsets)),
                          optional(kInputReplicaRacks, std::move(b.replica_racks)), int_list(b.unknown_entries),
                          int_list(b.rack_codes));
}

py::object build_groups_arrays(const TopicCatalog& catalog, const Array<int64_t>& member_offsets,
                             const py::object& member_ids, const py::object& instance_ids,
                             const Array<int64_t>& sub_offsets, const std::optional<Array<uint8_t>>& sub_valid,
                             const py::object& sub_names, const std::optional<Array<int64_t>>& owned_offsets,
                             const py::object& owned_names, const std::optional<Array<int64_t>>& owned_partition,
                             const std::optional<Array<uint8_t>>& owned_partition_valid,
                             const std::optional<Array<int64_t>>& generation,
                             const std::optional<Array<int32_t>>& member_rack, bool strict,
                             const std::optional<Array<uint8_t>>& sub_same, bool lean) {
    const NamedGroupsArgs args(member_offsets, member_ids, instance_ids, sub_offsets, sub_valid, sub_names, owned_offsets,
                               owned_names, owned_partition, owned_partition_valid, generation, member_rack, sub_same);
    BuiltGroups b;
    {
        py::gil_scoped_release release;
        b = build_groups(catalog, args.in, strict);
    }
    if (lean) {
        if (member_offsets.size() != 2)
            throw std::invalid_argument("build_groups: lean=True reads a batch of one group, got " +
                                        std::to_string(member_offsets.size() - 1) + " groups");
        return lean_built(std::move(b));
    }
    py::dict d;
    put_built(d, std::move(b));
    return d;
}

void bind_group_builder(py::module_& m) {
    py::class_<TopicCatalog>(m, "TopicCatalog",
                             "Topic metadata for build_groups: names (offsets, bytes, valid), counts, optional group\n"
                             "labels (per-group tables) and replica racks. Hashed once, when built.")
        .def(py::init(&make_catalog), py::arg("names"), py::arg("count"), py::arg("group") = py::none(),
             py::arg("has_racks") = py::none(), py::arg("part_start") = py::none(), py::arg("rack_off") = py::none(),
             py::arg("rack_codes") = py::none())
        .def("__len__", &TopicCatalog::size)
        .def_property_readonly("per_group", &TopicCatalog::per_group)
        .def("find", [](const TopicCatalog& c, const std::string& name, int64_t group) { return c.find(group, name); },
             py::arg("name"), py::arg("group") = -1, "Row of `name` (for `group` in a per-group catalog), or -1.")
        .def_property_readonly("repeated_rows", &TopicCatalog::repeated_rows);
    m.def("build_groups", &build_groups_arrays, py::arg("catalog"), py::arg("member_offsets"), py::arg("member_ids"),
          py::arg("instance_ids"), py::arg("sub_offsets"), py::arg("sub_valid"), py::arg("sub_names"),
          py::arg("owned_offsets"), py::arg("owned_names"), py::arg("owned_partition"),
          py::arg("owned_partition_valid"), py::arg("generation"), py::arg("member_rack"), py::arg("strict"),
          py::arg("sub_same") = py::none(), py::arg("lean") = false,
          "Names -> the GroupBatch arrays of many groups (csrc/kafkagroup/group_builder.hpp), GIL released.\n"
          "String columns are (offsets int64, bytes uint8, valid uint8 or None[, codes int32 or None]).\n"
          "sub_same uint8[M] (optional): 1 where a member lists the codes of the member before it.\n"
          "Returns a dict of numpy arrays plus 'errors': [(group, code, a, b, c)]. lean=True (a batch of one group,\n"
          "kafkagroup.model.build_group's) returns instead the tuple (errors, inputs, dropped, rows_up, member_perm,\n"
          "topic_row, partition_count, part_offsets, sub_offsets, sub_topics, owned_offsets, owned_partitions,\n"
          "generation, member_rack, replica_offsets, replica_racks, unknown_entries, rack_codes): optional arrays the\n"
          "group does not use are None, member_perm is None when it is the identity, rows_up says topic_row is\n"
          "0..n-1, inputs and dropped are ints, unknown_entries and rack_codes lists.");
    m.def("java_compare", [](const std::string& a, const std::string& b) { return java_compare(a, b); },
          py::arg("a"), py::arg("b"), "Java's String.compareTo sign over two UTF-8 strings.");
}

// ---- assignment rows in Arrow's layout (csrc/kafkagroup/output_rows.hpp)

// Hands an uninitialised-then-filled output buffer to numpy without a copy (numpy frees it).
template <class T>
py::array_t<T> out_array(OutBuffer<T>&& b) {
    auto* heap = new OutBuffer<T>(std::move(b));
    py::capsule owner(heap, [](void* p) {
        auto* buffer = static_cast<OutBuffer<T>*>(p);
        free_owned(buffer, buffer->size * sizeof(T));
    });
    return py::array_t<T>({static_cast<py::ssize_t>(heap->size)}, {sizeof(T)}, heap->data.get(), owner);
}

py::tuple string_out(StringOut&& s) {
    return py::make_tuple(out_array(std::move(s.offsets)), out_array(std::move(s.bytes)));
}

py::tuple assignment_rows_arrays(const py::object& group_ids, const py::object& member_ids, const py::object& topic_names,
                                 const Array<int64_t>& member_offsets, const Array<int64_t>& member_perm,
                                 const Array<int64_t>& topic_offsets, const Array<int64_t>& part_offsets,
                                 const Array<int32_t>& owner, int64_t g0, int64_t g1) {
    const StringsArg groups = StringsArg::from(group_ids, "group_ids", false);
    const StringsArg members = StringsArg::from(member_ids, "member_ids", false);
    const StringsArg topics = StringsArg::from(topic_names, "topic_names", false);
    BatchNamesView in{groups.column("group_ids"), members.column("member_ids"), topics.column("topic_names"),
                      view_of<int64_t>(member_offsets, "member_offsets"), view_of<int64_t>(member_perm, "member_perm"),
                      view_of<int64_t>(topic_offsets, "topic_offsets"), view_of<int64_t>(part_offsets, "part_offsets")};
    const View<int32_t> owners = view_of<int32_t>(owner, "owner");
    AssignmentRows r;
    {
        py::gil_scoped_release release;
        r = assignment_rows(in, owners, g0, g1);
    }
    return py::make_tuple(r.rows, string_out(std::move(r.group_id)), string_out(std::move(r.member_id)),
                          string_out(std::move(r.topic)), out_array(std::move(r.partition)));
}

void bind_output_rows(py::module_& m) {
    m.def("assignment_rows", &assignment_rows_arrays, py::arg("group_ids"), py::arg("member_ids"), py::arg("topic_names"),
          py::arg("member_offsets"), py::arg("member_perm"), py::arg("topic_offsets"), py::arg("part_offsets"),
          py::arg("owner"), py::arg("g0"), py::arg("g1"),
          "Assignment rows of groups g0..g1-1 of a built batch (GIL released): (rows, (group_id offsets int32,\n"
          "bytes uint8), (member_id ...), (topic ...), partition int32[rows]), Arrow string layout.\n"
          "String columns in are (offsets int64, bytes uint8, valid uint8 or None).");
}

// ---- build -> assign -> rows in one call (csrc/kafkagroup/plan_batch.hpp)

py::tuple rows_tuple(AssignmentRows&& r) {
    return py::make_tuple(r.rows, string_out(std::move(r.group_id)), string_out(std::move(r.member_id)),
                          string_out(std::move(r.topic)), out_array(std::move(r.partition)));
}

// A PyCapsule named `name` owning the Arrow C struct `p` (ArrowSchema, ArrowArray, ArrowArrayStream): when the
// capsule goes, the struct is released (unless a consumer moved it out, leaving release null) and deleted.
template <class ArrowStruct>
py::capsule owning_capsule(ArrowStruct* p, const char* name) {
    return py::capsule(p, name, [](PyObject* c) {
        auto* q = static_cast<ArrowStruct*>(PyCapsule_GetPointer(c, PyCapsule_GetName(c)));
        if (q->release) q->release(q);
        delete q;
    });
}

// A record batch exported through Arrow's C data interface (csrc/kafkagroup/arrow_export.hpp), handed to
// Python as the Arrow PyCapsule interface's `__arrow_c_array__` (pyarrow.record_batch(obj) imports it
// without a copy). The batch's memory is freed when the consumer releases the last array over it: with
// the GIL released when it is large (free_owned).
struct ArrowExport {
    ArrowSchema* schema = new ArrowSchema{};
    ArrowArray* array = new ArrowArray{};

    ArrowExport() = default;
    ArrowExport(const ArrowExport&) = delete;
    ArrowExport& operator=(const ArrowExport&) = delete;
    ~ArrowExport() {   // what was never handed out
        if (schema && schema->release) schema->release(schema);
        if (array && array->release) array->release(array);
        delete schema;
        delete array;
    }

    // Exports `batch` (no GIL needed).
    static std::unique_ptr<ArrowExport> of(ArrowRecordBatch&& batch) {
        auto out = std::make_unique<ArrowExport>();
        export_owned(std::move(batch), out->array, out->schema);
        return out;
    }

    // Exports `batch` into `array` and `schema`, its memory freed as free_owned says once the last array over it is
    // released (no GIL needed).
    static void export_owned(ArrowRecordBatch&& batch, ArrowArray* array, ArrowSchema* schema) {
        auto* buffers = new ArrowBuffers(std::move(batch.buffers));
        const std::shared_ptr<const void> owner(buffers, [](const ArrowBuffers* b) {
            free_owned(const_cast<ArrowBuffers*>(b), b->bytes());
        });
        export_record_batch(std::move(batch.columns), batch.length, owner, array, schema);
    }

    // (schema capsule, array capsule), once: each capsule releases its struct unless a consumer moved it out.
    py::tuple capsules(const py::object& requested_schema) {
        if (!requested_schema.is_none())
            throw std::invalid_argument("__arrow_c_array__: the batch is exported in its own schema only");
        if (!schema) throw std::invalid_argument("__arrow_c_array__: this batch was imported already");
        py::capsule s = owning_capsule(schema, "arrow_schema");
        schema = nullptr;
        py::capsule a = owning_capsule(array, "arrow_array");
        array = nullptr;
        return py::make_tuple(s, a);
    }
};

py::object arrow_export(std::unique_ptr<ArrowExport>&& e) { return py::cast(std::move(e)); }

// Record batches of one schema as one stream of Arrow's C stream interface (csrc/kafkagroup/arrow_export.hpp
// export_batch_stream), handed to Python as the PyCapsule interface's `__arrow_c_stream__`:
// pyarrow.RecordBatchReader.from_stream(obj).read_all() imports every batch in one call, in C++ with the GIL
// released (one pyarrow.record_batch call per batch holds it ~25-40 us each). len() is the batch count (a
// stream of no batches has no schema to give: the caller has its own).
struct ArrowStreamExport {
    ArrowArrayStream* stream = new ArrowArrayStream{};
    std::size_t batches = 0;

    ArrowStreamExport() = default;
    ArrowStreamExport(const ArrowStreamExport&) = delete;
    ArrowStreamExport& operator=(const ArrowStreamExport&) = delete;
    ~ArrowStreamExport() {   // what was never handed out
        if (stream && stream->release) stream->release(stream);
        delete stream;
    }

    // Exports `batches` (no GIL needed).
    static std::unique_ptr<ArrowStreamExport> of(std::vector<ArrowRecordBatch>&& batches) {
        auto out = std::make_unique<ArrowStreamExport>();
        std::vector<ExportedBatch> exported(batches.size());
        for (std::size_t b = 0; b < batches.size(); ++b)
            ArrowExport::export_owned(std::move(batches[b]), &exported[b].array, &exported[b].schema);
        out->batches = exported.size();
        export_batch_stream(std::move(exported), out->stream);
        return out;
    }

    // The stream's capsule, once: it releases the stream unless a consumer moved it out.
    py::capsule capsule(const py::object& requested_schema) {
        if (!requested_schema.is_none())
            throw std::invalid_argument("__arrow_c_stream__: the batches are exported in their own schema only");
        if (!stream) throw std::invalid_argument("__arrow_c_stream__: this stream was imported already");
        py::capsule s = owning_capsule(stream, "arrow_array_stream");
        stream = nullptr;
        return s;
    }
};

// plan_batch / plan_parts' options, the thread count checked.
PlanOptions plan_options(const std::string& strategy, bool strict, int threads, bool stop_on_error,
                         int64_t chunk_partitions, bool arrow) {
    if (threads < 1) throw std::invalid_argument("threads must be >= 1, got " + std::to_string(threads));
    PlanOptions options;
    options.strategy = strategy;
    options.strict = strict;
    options.threads = threads;
    options.stop_on_error = stop_on_error;
    options.chunk_partitions = chunk_partitions;
    options.arrow = arrow;
    return options;
}

py::object plan_batch_arrays(const TopicCatalog& catalog, const Array<int64_t>& member_offsets,
                             const py::object& member_ids, const py::object& instance_ids,
                             const Array<int64_t>& sub_offsets, const std::optional<Array<uint8_t>>& sub_valid,
                             const py::object& sub_names, const std::optional<Array<int64_t>>& owned_offsets,
                             const py::object& owned_names, const std::optional<Array<int64_t>>& owned_partition,
                             const std::optional<Array<uint8_t>>& owned_partition_valid,
                             const std::optional<Array<int64_t>>& generation,
                             const std::optional<Array<int32_t>>& member_rack, bool strict, const py::object& group_ids,
                             const std::optional<Array<uint8_t>>& skip, const std::string& strategy, int threads,
                             bool stop_on_error, int64_t chunk_partitions, bool arrow) {
    const NamedGroupsArgs args(member_offsets, member_ids, instance_ids, sub_offsets, sub_valid, sub_names, owned_offsets,
                               owned_names, owned_partition, owned_partition_valid, generation, member_rack, std::nullopt);
    const StringsArg groups = StringsArg::from(group_ids, "group_ids", false);
    const PlanOptions options = plan_options(strategy, strict, threads, stop_on_error, chunk_partitions, arrow);
    PlannedBatch p;
    std::vector<std::unique_ptr<ArrowExport>> row_batches;
    std::unique_ptr<ArrowExport> metrics;
    {
        py::gil_scoped_release release;
        p = plan_batch(catalog, args.in, groups.column("group_ids"), view_of(skip, "skip"), options);
        if (arrow && p.rows_written) {
            for (ArrowRecordBatch& b : p.row_batches) row_batches.push_back(ArrowExport::of(std::move(b)));
            metrics = ArrowExport::of(std::move(p.metrics));
        }
    }
    const py::list build_errors = build_error_list(p.built.errors), engine_errors = engine_error_list(p.result.errors);
    if (arrow) {
        py::list rows;
        for (auto& e : row_batches) rows.append(arrow_export(std::move(e)));
        {   // the batch's intermediate arrays are freed with the GIL released
            py::gil_scoped_release release;
            const PlannedBatch drop = std::move(p);
        }
        return py::make_tuple(build_errors, engine_errors, rows, metrics ? arrow_export(std::move(metrics)) : py::none());
    }
    py::dict d;
    put_built(d, std::move(p.built));
    d["topic_names"] = string_out(std::move(p.topic_names));
    d["assigned"] = p.assigned;
    if (p.assigned) {
        BatchResult& r = p.result;
        const auto num_groups = static_cast<py::ssize_t>(r.engine_us.size());
        d["result"] = py::make_tuple(owned_array(std::move(r.part_offsets)), owned_array(std::move(r.owner)),
                                     owned_array(std::move(r.withheld_offsets)), owned_array(std::move(r.withheld)),
                                     metrics_array(std::move(r.metrics), num_groups),
                                     owned_array(std::move(r.engine_us)), engine_errors);
    }
    py::list rows;
    for (AssignmentRows& r : p.rows) rows.append(rows_tuple(std::move(r)));
    d["rows_written"] = p.rows_written;
    d["chunk_groups"] = owned_array(std::move(p.chunk_groups));
    d["rows"] = rows;
    return d;
}

// plan_parts(): the batch in parts on native threads (csrc/kafkagroup/plan_batch.hpp), outputs as Arrow.
py::object plan_parts_arrays(const TopicCatalog& catalog, const Array<int64_t>& member_offsets,
                             const py::object& member_ids, const py::object& instance_ids,
                             const Array<int64_t>& sub_offsets, const std::optional<Array<uint8_t>>& sub_valid,
                             const py::object& sub_names, const std::optional<Array<int64_t>>& owned_offsets,
                             const py::object& owned_names, const std::optional<Array<int64_t>>& owned_partition,
                             const std::optional<Array<uint8_t>>& owned_partition_valid,
                             const std::optional<Array<int64_t>>& generation,
                             const std::optional<Array<int32_t>>& member_rack, bool strict, const py::object& group_ids,
                             const std::optional<Array<uint8_t>>& skip, const std::string& strategy, int threads,
                             bool stop_on_error, int64_t chunk_partitions, int64_t part_groups,
                             std::optional<int64_t> min_part_groups, int spread) {
    const NamedGroupsArgs args(member_offsets, member_ids, instance_ids, sub_offsets, sub_valid, sub_names, owned_offsets,
                               owned_names, owned_partition, owned_partition_valid, generation, member_rack, std::nullopt);
    const StringsArg groups = StringsArg::from(group_ids, "group_ids", false);
    const PlanOptions options = plan_options(strategy, strict, threads, stop_on_error, chunk_partitions, true);
    if (part_groups < 1) throw std::invalid_argument("part_groups must be >= 1, got " + std::to_string(part_groups));
    const PartSizes sizes{part_groups, min_part_groups.value_or(part_groups), spread};
    if (sizes.min_groups < 1) throw std::invalid_argument("min_part_groups must be >= 1, got " + std::to_string(sizes.min_groups));
    if (spread < 1) throw std::invalid_argument("spread must be >= 1, got " + std::to_string(spread));
    PlannedParts planned;
    std::unique_ptr<ArrowStreamExport> rows, metrics;
    {
        py::gil_scoped_release release;
        planned = plan_parts(catalog, args.in, groups.column("group_ids"), view_of(skip, "skip"), options, sizes);
        std::vector<ArrowRecordBatch> row_batches, metrics_batches;
        for (PlannedBatch& p : planned.parts) {
            for (ArrowRecordBatch& b : p.row_batches) row_batches.push_back(std::move(b));
            if (p.rows_written) metrics_batches.push_back(std::move(p.metrics));
        }
        rows = ArrowStreamExport::of(std::move(row_batches));
        metrics = ArrowStreamExport::of(std::move(metrics_batches));
    }
    const py::list build_errors = build_error_list(planned.build_errors);
    const py::list engine_errors = engine_error_list(planned.engine_errors);
    py::object rows_out = py::cast(std::move(rows)), metrics_out = py::cast(std::move(metrics));
    py::object bounds = owned_array(std::move(planned.part_groups));
    {   // the parts' intermediate arrays are freed with the GIL released
        py::gil_scoped_release release;
        const PlannedParts drop = std::move(planned);
    }
    return py::make_tuple(build_errors, engine_errors, rows_out, metrics_out, bounds);
}

// metrics_rows() of a batch planned elsewhere (kafkagroup.spark.executor.metrics_columns).
py::object metrics_rows_arrays(const py::object& group_ids, const std::string& strategy, const Array<int64_t>& member_offsets,
                               const Array<int64_t>& topic_offsets, const Array<int64_t>& part_offsets,
                               const Array<int64_t>& metrics, const Array<double>& engine_us,
                               const std::optional<Array<uint8_t>>& failed, const Array<int64_t>& unknown_offsets,
                               const py::object& unknown_names, const Array<int64_t>& dropped_claims) {
    const StringsArg groups = StringsArg::from(group_ids, "group_ids", false);
    const StringsArg unknown = StringsArg::from(unknown_names, "unknown_names", false);
    NameColumn names;
    names.strings = unknown.column("unknown_names");
    const MetricsRowsView in{groups.column("group_ids"), strategy, view_of<int64_t>(member_offsets, "member_offsets"),
                             view_of<int64_t>(topic_offsets, "topic_offsets"), view_of<int64_t>(part_offsets, "part_offsets"),
                             view_of<int64_t>(metrics, "metrics"), view_of<double>(engine_us, "engine_us"),
                             view_of(failed, "failed"), view_of<int64_t>(unknown_offsets, "unknown_offsets"), names,
                             View<int64_t>{}, view_of<int64_t>(dropped_claims, "dropped_claims")};
    std::unique_ptr<ArrowExport> out;
    {
        py::gil_scoped_release release;
        out = ArrowExport::of(metrics_rows(in));
    }
    return arrow_export(std::move(out));
}

void bind_plan_batch(py::module_& m) {
    py::class_<ArrowExport>(m, "ArrowExport",
                            "A record batch in Arrow's C data interface: pyarrow.record_batch(it) imports it (once).")
        .def("__arrow_c_array__", &ArrowExport::capsules, py::arg("requested_schema") = py::none());
    py::class_<ArrowStreamExport>(m, "ArrowStreamExport",
                                  "Record batches in Arrow's C stream interface: pyarrow.RecordBatchReader.from_stream(it)\n"
                                  "imports them (once); len() is the batch count (no batches: no schema).")
        .def("__arrow_c_stream__", &ArrowStreamExport::capsule, py::arg("requested_schema") = py::none())
        .def("__len__", [](const ArrowStreamExport& s) { return s.batches; });
    m.def("plan_batch", &plan_batch_arrays, py::arg("catalog"), py::arg("member_offsets"), py::arg("member_ids"),
          py::arg("instance_ids"), py::arg("sub_offsets"), py::arg("sub_valid"), py::arg("sub_names"),
          py::arg("owned_offsets"), py::arg("owned_names"), py::arg("owned_partition"),
          py::arg("owned_partition_valid"), py::arg("generation"), py::arg("member_rack"), py::arg("strict"),
          py::arg("group_ids"), py::arg("skip"), py::arg("strategy"), py::arg("threads"), py::arg("stop_on_error"),
          py::arg("chunk_partitions"), py::arg("arrow") = false,
          "build_groups -> assign_batch -> assignment_rows per output chunk in one call, the GIL released once\n"
          "(csrc/kafkagroup/plan_batch.hpp). Returns build_groups' dict plus 'topic_names' (offsets int32, bytes),\n"
          "'assigned' and 'result' (assign_batch's tuple, when assigned), 'rows_written', 'chunk_groups'\n"
          "int64[C+1] and 'rows': per chunk assignment_rows' tuple.\n"
          "arrow=True: returns (build errors [(group, code, a, b, c)], engine errors [(group, kind, message)],\n"
          "[ArrowExport of each chunk's assignment rows], ArrowExport of the metrics rows or None when stopped).");
    m.def("plan_parts", &plan_parts_arrays, py::arg("catalog"), py::arg("member_offsets"), py::arg("member_ids"),
          py::arg("instance_ids"), py::arg("sub_offsets"), py::arg("sub_valid"), py::arg("sub_names"),
          py::arg("owned_offsets"), py::arg("owned_names"), py::arg("owned_partition"),
          py::arg("owned_partition_valid"), py::arg("generation"), py::arg("member_rack"), py::arg("strict"),
          py::arg("group_ids"), py::arg("skip"), py::arg("strategy"), py::arg("threads"), py::arg("stop_on_error"),
          py::arg("chunk_partitions"), py::arg("part_groups"), py::arg("min_part_groups") = py::none(),
          py::arg("spread") = 1,
          "plan_batch(arrow=True) of the batch cut into parts of whole groups, planned on `threads` native threads\n"
          "with the GIL released once (csrc/kafkagroup/plan_batch.hpp plan_parts). Parts take 1/(2 * spread) of the\n"
          "groups left, between min_part_groups (default: part_groups, i.e. equal parts) and part_groups\n"
          "(plan_batch.hpp part_bounds): the same parts whatever `threads` is. Returns (build errors\n"
          "[(group, code, a, b, c)], engine errors [(group, kind, message)], both in the batch's indices,\n"
          "ArrowStreamExport of every chunk's assignment rows (parts in order), ArrowStreamExport of the metrics rows\n"
          "of each part whose rows were written (one batch per part; a part stopped on an error has none),\n"
          "part_groups int64[P+1]: part p holds groups part_groups[p]..[p+1]).");
    m.def("output_memory", [](std::optional<int64_t> limit) {
              if (limit) {
                  if (*limit < 0) throw std::invalid_argument("output_memory: limit must be >= 0, got " + std::to_string(*limit));
                  set_output_retain_limit(static_cast<std::size_t>(*limit));
              }
              return py::make_tuple(output_retained_bytes(), output_retain_limit());
          }, py::arg("limit") = py::none(),
          "(bytes kept, limit) of the output rows' memory kept for reuse (csrc/kafkagroup/output_memory.hpp);\n"
          "limit sets the limit first (kept blocks beyond it are freed; 0 keeps nothing).");
    m.def("metrics_rows", &metrics_rows_arrays, py::arg("group_ids"), py::arg("strategy"), py::arg("member_offsets"),
          py::arg("topic_offsets"), py::arg("part_offsets"), py::arg("metrics"), py::arg("engine_us"), py::arg("failed"),
          py::arg("unknown_offsets"), py::arg("unknown_names"), py::arg("dropped_claims"),
          "The metrics rows of a batch (csrc/kafkagroup/metrics_rows.hpp) as an ArrowExport. metrics int64\n"
          "[kMetricCount * G] column-major in metric_names() order; failed uint8[G] or None.");
}

}  // namespace

PYBIND11_MODULE(_core, m) {
    m.doc() = "kafkagroup native engine (C++17): partition assignors over the compact problem arrays";

    g_invalid_group_error = py::object(py::module_::import("kafkagroup.errors").attr("InvalidGroupError")).release().ptr();
    g_invariant_error = py::object(py::module_::import("kafkagroup.errors").attr("InvariantError")).release().ptr();
    // Applies to every binding of this module. std::invalid_argument derives from std::logic_error, so it
    // is caught first; other exceptions (std::bad_alloc -> MemoryError, ...) keep pybind11's mapping.
    py::register_exception_translator([](std::exception_ptr p) {
        if (p) set_engine_error(p);
    });

    m.attr("MAX_PARTITIONS") = kMaxPartitions;
    // Test hook for the translator above, not an engine entry point: throws the named C++ exception type
    // with `message` so tests can check what each type becomes in Python (no engine input reaches an
    // invariant breach on purpose). Touches no state.
    m.def("_raise_cpp_exception", [](const std::string& kind, const std::string& message) {
        if (kind == "invalid_argument") throw std::invalid_argument(message);
        if (kind == "logic_error") throw std::logic_error(message);
        if (kind == "out_of_range") throw std::out_of_range(message);
        if (kind == "runtime_error") throw std::runtime_error(message);
        throw std::invalid_argument("_raise_cpp_exception: unknown kind '" + kind + "'");
    }, py::arg("kind"), py::arg("message"),
          "Test hook: throw the C++ exception `kind` (invalid_argument, logic_error, out_of_range, runtime_error).");

    m.def("strategies", &strategy_names, "Strategy names the engine implements, in registration order.");
    m.def("strategies_ignoring_claims", &strategies_ignoring_claims,
          "The strategies whose answer never depends on the previous assignment: with metrics off, claims unread.");
    m.def("assign", &assign_arrays, py::arg("strategy"), py::arg("partition_count"), py::arg("sub_offsets"),
          py::arg("sub_topics"), py::arg("owned_offsets") = py::none(), py::arg("owned_partitions") = py::none(),
          py::arg("generation") = py::none(), py::arg("member_rack") = py::none(),
          py::arg("replica_offsets") = py::none(), py::arg("replica_racks") = py::none(),
          "Run one assignor on the compact problem. Returns (owner int32[P], withheld int32[W], metrics dict).\n"
          "Raises kafkagroup.errors.InvalidGroupError for inconsistent arrays (the message names the index).");
    m.attr("assign_exact") = py::reinterpret_steal<py::object>(PyCFunction_NewEx(&g_assign_exact_def, nullptr, m.attr("__name__").ptr()));
    m.def("set_result_types", &set_result_types, py::arg("array_result"), py::arg("metrics"),
          "Registers kafkagroup.engine's ArrayResult and Metrics classes, which assign_exact returns.");
    bind_batch(m);
    bind_group_builder(m);
    bind_output_rows(m);
    bind_plan_batch(m);
}
