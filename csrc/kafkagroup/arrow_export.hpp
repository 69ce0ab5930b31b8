// Record batches handed out through Arrow's C data interface
// (https://arrow.apache.org/docs/format/CDataInterface.html): the columns are written here, in Arrow's
// layout, and a consumer (pyarrow's RecordBatch import) takes each as it is, in one call per batch.
// Why: wrapping a batch's ~20 output buffers one by one into pyarrow arrays, then into a record batch, is
// a few dozen Python-level calls per batch, all holding Python's GIL; the fleet loop's GIL-held share
// of CPU is what caps its speed-up on threads (issue 26). Only the types the outputs use are covered.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

// The interface's two structs, as its specification defines them (a stable ABI; a program that already
// has them from Arrow's own header keeps those).
#ifndef ARROW_C_DATA_INTERFACE
#define ARROW_C_DATA_INTERFACE

#define ARROW_FLAG_DICTIONARY_ORDERED 1
#define ARROW_FLAG_NULLABLE 2
#define ARROW_FLAG_MAP_KEYS_SORTED 4

struct ArrowSchema {
    const char* format;
    const char* name;
    const char* metadata;
    int64_t flags;
    int64_t n_children;
    struct ArrowSchema** children;
    struct ArrowSchema* dictionary;
    void (*release)(struct ArrowSchema*);
    void* private_data;
};

struct ArrowArray {
    int64_t length;
    int64_t null_count;
    int64_t offset;
    int64_t n_buffers;
    int64_t n_children;
    const void** buffers;
    struct ArrowArray** children;
    struct ArrowArray* dictionary;
    void (*release)(struct ArrowArray*);
    void* private_data;
};

#endif  // ARROW_C_DATA_INTERFACE

// The C stream interface's struct (https://arrow.apache.org/docs/format/CStreamInterface.html), as its
// specification defines it.
#ifndef ARROW_C_STREAM_INTERFACE
#define ARROW_C_STREAM_INTERFACE

struct ArrowArrayStream {
    int (*get_schema)(struct ArrowArrayStream*, struct ArrowSchema* out);
    int (*get_next)(struct ArrowArrayStream*, struct ArrowArray* out);
    const char* (*get_last_error)(struct ArrowArrayStream*);
    void (*release)(struct ArrowArrayStream*);
    void* private_data;
};

#endif  // ARROW_C_STREAM_INTERFACE

namespace kafkagroup {

// Memory behind exported columns: every buffer kept here lives until the last array exported over it is
// released by its consumer.
class ArrowBuffers {
public:
    // Takes ownership of `v` (no copy) and returns its data.
    template <class T>
    const T* keep(std::vector<T>&& v) {
        auto held = std::make_shared<std::vector<T>>(std::move(v));
        bytes_ += held->capacity() * sizeof(T);
        held_.push_back(held);
        return held->data();
    }
    // Takes ownership of `data` (n elements, released by its own deleter) and returns it.
    template <class T, class Deleter>
    const T* keep(std::unique_ptr<T[], Deleter>&& data, std::size_t n) {
        std::shared_ptr<T> held(data.release(), data.get_deleter());
        bytes_ += n * sizeof(T);
        held_.push_back(std::shared_ptr<void>(held, held.get()));
        return held.get();
    }
    std::size_t bytes() const { return bytes_; }

private:
    std::vector<std::shared_ptr<void>> held_;
    std::size_t bytes_ = 0;
};

// One column (or child array) in Arrow's layout. Formats used: "u" utf8 (buffers: validity, int32
// offsets, bytes), "i" int32, "l" int64, "g" float64 (validity, values), "+l" list (validity, int32
// offsets; one child). Validity is a bitmap (bit i of byte i/8, least significant first), nullptr when
// null_count is 0. Every field is exported as nullable (pyarrow's default for a schema's fields).
struct ArrowColumn {
    std::string name;
    std::string format;
    int64_t length = 0;
    int64_t null_count = 0;
    std::vector<const void*> buffers;
    std::vector<ArrowColumn> children;
};

// A record batch: columns of `length` rows each and the memory they point into.
struct ArrowRecordBatch {
    int64_t length = 0;
    std::vector<ArrowColumn> columns;
    ArrowBuffers buffers;
};

// Fills `array` and `schema` (uninitialised structs owned by the caller) with `batch` as a struct array
// ("+s") whose children are its columns. Each exported array holds a reference to `owner` (the batch's
// memory, with whatever deleter the caller wants run when the last one is released). The consumer
// releases `array` and `schema` by their release callbacks, as the interface says.
void export_record_batch(std::vector<ArrowColumn>&& columns, int64_t length, const std::shared_ptr<const void>& owner,
                         ArrowArray* array, ArrowSchema* schema);

// One record batch exported (export_record_batch's array and schema), released on destruction unless moved on.
struct ExportedBatch {
    ArrowArray array{};
    ArrowSchema schema{};

    ExportedBatch() = default;
    ExportedBatch(ExportedBatch&& other) noexcept;
    ExportedBatch& operator=(ExportedBatch&&) = delete;
    ExportedBatch(const ExportedBatch&) = delete;
    ~ExportedBatch();
};

// Fills `stream` (an uninitialised struct owned by the caller) with `batches`, which it takes: get_next hands
// out their arrays in order, then the end (a released array); get_schema a copy of the first batch's schema
// (no batches: it fails with EINVAL, there being no schema to give; callers know the count). Why one stream
// for many batches: a consumer imports the whole stream in one call (pyarrow's RecordBatchReader.read_all,
// its C++ with Python's GIL released) where it would take one Python-level call per batch otherwise (issue 26:
// ~25-40 us each under the GIL, on the calling thread alone, 100 of them at 100,000 small groups).
// The batches must all have the first batch's columns (names and formats, children alike), since a consumer
// reads every array by the one schema: checked here (std::logic_error, the batches released).
void export_batch_stream(std::vector<ExportedBatch>&& batches, ArrowArrayStream* stream);

// A validity bitmap (Arrow's layout) of `n` entries, valid where `valid(i)` is true; its null count.
template <class Valid>
std::vector<uint8_t> validity_bitmap(std::size_t n, Valid valid, int64_t& null_count) {
    std::vector<uint8_t> bits((n + 7) / 8, 0);
    null_count = 0;
    for (std::size_t i = 0; i < n; ++i) {
        if (valid(i))
            bits[i >> 3] = static_cast<uint8_t>(bits[i >> 3] | (1u << (i & 7)));
        else
            ++null_count;
    }
    return bits;
}

}  // namespace kafkagroup
