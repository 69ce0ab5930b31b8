// The output rows' kept memory (output_memory.hpp): a released block comes back for a request of its size
// class, the kept total never passes the limit, lowering the limit frees what is over it, small blocks are
// never kept. Linked into the same program as engine_test.cpp.
#include <doctest/doctest.h>

#include <cstddef>

#include "kafkagroup/output_memory.hpp"

using namespace kafkagroup;

namespace {

struct LimitGuard {   // the process-wide limit restored after each case
    std::size_t saved = output_retain_limit();
    ~LimitGuard() { set_output_retain_limit(saved); }
};

}  // namespace

TEST_CASE("output memory: a released block serves the next request of its class") {
    LimitGuard guard;
    set_output_retain_limit(0);   // start empty
    set_output_retain_limit(std::size_t{64} << 20);
    std::size_t capacity = 0;
    void* block = output_allocate(1'000'000, capacity);
    CHECK(capacity >= 1'000'000);
    CHECK(capacity <= 1'000'000 + 1'000'000 / 8);
    output_release(block, capacity);
    CHECK(output_retained_bytes() == capacity);
    std::size_t again = 0;
    void* reused = output_allocate(999'000, again);   // same class
    CHECK(reused == block);
    CHECK(again == capacity);
    CHECK(output_retained_bytes() == 0);
    std::size_t other = 0;
    void* fresh = output_allocate(3'000'000, other);   // no kept block that large
    CHECK(fresh != block);
    output_release(reused, again);
    output_release(fresh, other);
    CHECK(output_retained_bytes() == again + other);
}

TEST_CASE("output memory: the limit is kept to; small blocks are never kept") {
    LimitGuard guard;
    set_output_retain_limit(0);
    set_output_retain_limit(std::size_t{3} << 20);
    std::size_t a = 0, b = 0, small = 0;
    void* first = output_allocate(std::size_t{2} << 20, a);
    void* second = output_allocate(std::size_t{2} << 20, b);
    void* tiny = output_allocate(100, small);
    output_release(first, a);
    output_release(second, b);   // over the limit: freed
    output_release(tiny, small);
    CHECK(output_retained_bytes() == a);
    set_output_retain_limit(std::size_t{1} << 20);   // lowering frees what no longer fits
    CHECK(output_retained_bytes() == 0);
    OutputPtr<int> zero = allocate_output<int>(0);   // never a null pointer
    CHECK(zero.get() != nullptr);
}
