// export_record_batch(): every exported node (the batch and each column, each list's child) is allocated
// here with its own release callback, as the interface requires (a consumer may move a child out and
// release it on its own); a parent's release releases the children it still holds.
#include "kafkagroup/arrow_export.hpp"

#include <cerrno>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <utility>

namespace kafkagroup {
namespace {

struct SchemaPrivate {
    std::string format, name;
    std::vector<ArrowSchema*> children;
};

struct ArrayPrivate {
    std::shared_ptr<const void> owner;
    std::vector<const void*> buffers;
    std::vector<ArrowArray*> children;
};

void release_schema(ArrowSchema* schema) {
    auto* p = static_cast<SchemaPrivate*>(schema->private_data);
    for (ArrowSchema* child : p->children) {
        if (child->release) child->release(child);
        delete child;
    }
    delete p;
    schema->release = nullptr;
}

void release_array(ArrowArray* array) {
    auto* p = static_cast<ArrayPrivate*>(array->private_data);
    for (ArrowArray* child : p->children) {
        if (child->release) child->release(child);
        delete child;
    }
    delete p;   // drops this node's reference to the memory
    array->release = nullptr;
}

void fill_schema(ArrowSchema* out, std::string format, std::string name, std::vector<ArrowSchema*> children,
                 int64_t flags) {
    auto* p = new SchemaPrivate{std::move(format), std::move(name), std::move(children)};
    *out = ArrowSchema{p->format.c_str(), p->name.c_str(), nullptr, flags, static_cast<int64_t>(p->children.size()),
                       p->children.data(), nullptr, &release_schema, p};
}

void fill_array(ArrowArray* out, int64_t length, int64_t null_count, std::vector<const void*> buffers,
                std::vector<ArrowArray*> children, const std::shared_ptr<const void>& owner) {
    auto* p = new ArrayPrivate{owner, std::move(buffers), std::move(children)};
    *out = ArrowArray{length, null_count, 0, static_cast<int64_t>(p->buffers.size()), static_cast<int64_t>(p->children.size()),
                      p->buffers.data(), p->children.data(), nullptr, &release_array, p};
}

std::size_t buffer_count(const std::string& format) {
    if (format == "u") return 3;
    if (format == "i" || format == "l" || format == "g" || format == "+l") return 2;
    throw std::logic_error("export_record_batch: format '" + format + "' is not one this exporter writes");
}

// The column's schema and array, children first (each node owns what it allocated only once filled).
void export_column(ArrowColumn&& column, const std::shared_ptr<const void>& owner, ArrowArray* array,
                   ArrowSchema* schema) {
    if (column.buffers.size() != buffer_count(column.format))
        throw std::logic_error("export_record_batch: column '" + column.name + "' has " +
                               std::to_string(column.buffers.size()) + " buffers for format '" + column.format + "'");
    if (column.format == "+l" && column.children.size() != 1)
        throw std::logic_error("export_record_batch: list column '" + column.name + "' needs one child");
    std::vector<ArrowArray*> child_arrays;
    std::vector<ArrowSchema*> child_schemas;
    for (ArrowColumn& child : column.children) {
        child_arrays.push_back(new ArrowArray{});
        child_schemas.push_back(new ArrowSchema{});
        export_column(std::move(child), owner, child_arrays.back(), child_schemas.back());
    }
    fill_schema(schema, std::move(column.format), std::move(column.name), std::move(child_schemas), ARROW_FLAG_NULLABLE);
    fill_array(array, column.length, column.null_count, std::move(column.buffers), std::move(child_arrays), owner);
}

}  // namespace

void export_record_batch(std::vector<ArrowColumn>&& columns, int64_t length, const std::shared_ptr<const void>& owner,
                         ArrowArray* array, ArrowSchema* schema) {
    for (const ArrowColumn& c : columns)
        if (c.length != length)
            throw std::logic_error("export_record_batch: column '" + c.name + "' has " + std::to_string(c.length) +
                                   " rows, the batch " + std::to_string(length));
    std::vector<ArrowArray*> arrays;
    std::vector<ArrowSchema*> schemas;
    for (ArrowColumn& c : columns) {
        arrays.push_back(new ArrowArray{});
        schemas.push_back(new ArrowSchema{});
        export_column(std::move(c), owner, arrays.back(), schemas.back());
    }
    fill_schema(schema, "+s", "", std::move(schemas), 0);
    fill_array(array, length, 0, {nullptr}, std::move(arrays), owner);
}

ExportedBatch::ExportedBatch(ExportedBatch&& other) noexcept : array(other.array), schema(other.schema) {
    other.array.release = nullptr;
    other.schema.release = nullptr;
}

ExportedBatch::~ExportedBatch() {
    if (array.release) array.release(&array);
    if (schema.release) schema.release(&schema);
}

namespace {

// A copy of one of export_record_batch's schemas (format, name, flags, children; it writes no metadata or
// dictionary), released on its own.
void copy_schema(const ArrowSchema& in, ArrowSchema* out) {
    std::vector<ArrowSchema*> children;
    children.reserve(static_cast<std::size_t>(in.n_children));
    for (int64_t c = 0; c < in.n_children; ++c) {
        children.push_back(new ArrowSchema{});
        copy_schema(*in.children[c], children.back());
    }
    fill_schema(out, in.format, in.name ? in.name : "", std::move(children), in.flags);
}

bool same_schema(const ArrowSchema& a, const ArrowSchema& b) {
    if (std::strcmp(a.format, b.format) != 0 || std::strcmp(a.name ? a.name : "", b.name ? b.name : "") != 0 ||
        a.flags != b.flags || a.n_children != b.n_children)
        return false;
    for (int64_t c = 0; c < a.n_children; ++c)
        if (!same_schema(*a.children[c], *b.children[c])) return false;
    return true;
}

struct StreamPrivate {
    std::vector<ExportedBatch> batches;
    std::size_t next = 0;
};

int stream_schema(ArrowArrayStream* stream, ArrowSchema* out) {
    const auto* p = static_cast<StreamPrivate*>(stream->private_data);
    if (p->batches.empty()) return EINVAL;
    try {
        copy_schema(p->batches.front().schema, out);
    } catch (const std::bad_alloc&) {
        return ENOMEM;
    }
    return 0;
}

int stream_next(ArrowArrayStream* stream, ArrowArray* out) {
    auto* p = static_cast<StreamPrivate*>(stream->private_data);
    if (p->next == p->batches.size()) {
        *out = ArrowArray{};   // release == nullptr: the end of the stream
        return 0;
    }
    ArrowArray& a = p->batches[p->next++].array;
    *out = a;   // the consumer owns it now
    a.release = nullptr;
    return 0;
}

const char* stream_error(ArrowArrayStream* stream) {
    const auto* p = static_cast<StreamPrivate*>(stream->private_data);
    return p->batches.empty() ? "the stream has no batches, hence no schema" : nullptr;
}

void release_stream(ArrowArrayStream* stream) {
    delete static_cast<StreamPrivate*>(stream->private_data);   // releases the batches not handed out
    stream->release = nullptr;
}

}  // namespace

void export_batch_stream(std::vector<ExportedBatch>&& batches, ArrowArrayStream* stream) {
    auto p = std::make_unique<StreamPrivate>();
    p->batches = std::move(batches);
    for (std::size_t b = 1; b < p->batches.size(); ++b)
        if (!same_schema(p->batches[b].schema, p->batches.front().schema))
            throw std::logic_error("export_batch_stream: batch " + std::to_string(b) +
                                   " has other columns than the first");
    *stream = ArrowArrayStream{&stream_schema, &stream_next, &stream_error, &release_stream, p.release()};
}

}  // namespace kafkagroup
