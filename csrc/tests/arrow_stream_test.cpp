// arrow_export.hpp export_batch_stream: the batches handed out in order, then the end; the schema copied on every
// request; batches of other columns refused; every batch's memory released whether or not it was handed out.
// Linked into the same program as engine_test.cpp.
#include <doctest/doctest.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kafkagroup/arrow_export.hpp"

using namespace kafkagroup;

namespace {

// A batch of one int32 column `name` (values `values`, kept alive by `owner`) exported as export_record_batch does.
ExportedBatch int_batch(const std::string& name, const std::vector<int32_t>& values,
                        const std::shared_ptr<const void>& owner, const char* format = "i") {
    std::vector<ArrowColumn> columns(1);
    columns[0].name = name;
    columns[0].format = format;
    columns[0].length = static_cast<int64_t>(values.size());
    columns[0].buffers = {nullptr, values.data()};
    ExportedBatch out;
    export_record_batch(std::move(columns), static_cast<int64_t>(values.size()), owner, &out.array, &out.schema);
    return out;
}

}  // namespace

TEST_CASE("export_batch_stream: batches in order, then the end; a schema per request; all memory released") {
    const std::vector<int32_t> a{1, 2, 3}, b{4}, c{};
    auto memory = std::make_shared<int>(0);
    const std::weak_ptr<int> watch = memory;
    std::vector<ExportedBatch> batches;
    batches.push_back(int_batch("x", a, memory));
    batches.push_back(int_batch("x", b, memory));
    batches.push_back(int_batch("x", c, memory));
    memory.reset();   // the batches hold it now
    ArrowArrayStream stream{};
    export_batch_stream(std::move(batches), &stream);
    REQUIRE(static_cast<bool>(stream.release));
    for (int twice = 0; twice < 2; ++twice) {
        ArrowSchema schema{};
        REQUIRE(stream.get_schema(&stream, &schema) == 0);
        CHECK(std::string(schema.format) == "+s");
        REQUIRE(schema.n_children == 1);
        CHECK(std::string(schema.children[0]->format) == "i");
        CHECK(std::string(schema.children[0]->name) == "x");
        schema.release(&schema);
        CHECK(!schema.release);
    }
    std::vector<int64_t> lengths;
    ArrowArray array{};
    ArrowArray first{};
    for (;;) {
        REQUIRE(stream.get_next(&stream, &array) == 0);
        if (!array.release) break;   // the end
        lengths.push_back(array.length);
        if (lengths.size() == 1) {
            first = array;   // kept past the stream's release: its memory must stay
            const auto* values = static_cast<const int32_t*>(first.children[0]->buffers[1]);
            CHECK(values[2] == 3);
        } else {
            array.release(&array);
        }
    }
    CHECK(lengths == std::vector<int64_t>{3, 1, 0});
    REQUIRE(stream.get_next(&stream, &array) == 0);   // still the end
    CHECK(!array.release);
    stream.release(&stream);
    CHECK(!stream.release);
    CHECK(!watch.expired());   // the array handed out still holds the memory
    first.release(&first);
    CHECK(watch.expired());
}

TEST_CASE("export_batch_stream: batches not handed out are released with the stream; no batches, no schema") {
    const std::vector<int32_t> a{1, 2};
    auto memory = std::make_shared<int>(0);
    const std::weak_ptr<int> watch = memory;
    std::vector<ExportedBatch> batches;
    batches.push_back(int_batch("x", a, memory));
    batches.push_back(int_batch("x", a, memory));
    memory.reset();
    ArrowArrayStream stream{};
    export_batch_stream(std::move(batches), &stream);
    stream.release(&stream);
    CHECK(watch.expired());

    ArrowArrayStream empty{};
    export_batch_stream({}, &empty);
    ArrowSchema schema{};
    CHECK(empty.get_schema(&empty, &schema) == EINVAL);
    CHECK(std::strlen(empty.get_last_error(&empty)) > 0);
    ArrowArray array{};
    CHECK(empty.get_next(&empty, &array) == 0);
    CHECK(!array.release);
    empty.release(&empty);
}

TEST_CASE("export_batch_stream: a batch of other columns is refused and every batch released") {
    const std::vector<int32_t> a{1, 2};
    for (const bool other_name : {true, false}) {
        auto memory = std::make_shared<int>(0);
        const std::weak_ptr<int> watch = memory;
        std::vector<ExportedBatch> batches;
        batches.push_back(int_batch("x", a, memory));
        batches.push_back(other_name ? int_batch("y", a, memory) : int_batch("x", a, memory, "l"));
        memory.reset();
        ArrowArrayStream stream{};
        CHECK_THROWS_AS(export_batch_stream(std::move(batches), &stream), std::logic_error);
        CHECK(!stream.release);
        CHECK(watch.expired());
    }
}
