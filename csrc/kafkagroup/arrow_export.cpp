// export_record_batch(): every exported node (the batch and each column, each list's child) is allocated
// here with its own release callback, as the interface requires (a consumer may move a child out and
// release it on its own); a parent's release releases the children it still holds.
#include "kafkagroup/arrow_export.hpp"

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

}  // namespace kafkagroup
