// Memory of the output rows (assignment rows and the batch topics' names: output_rows.hpp OutBuffer), kept
// for reuse after their consumer lets go of it, up to a limit per process.
//
// Why: the rows are fresh memory on every call (~6.5 KB per small group of the fleet loop), and malloc
// hands blocks this large back to the kernel when they are freed (munmap, or a trimmed heap top), so the
// next call's rows fault every page in again and the kernel zeroes it. Measured on the fleet loop (10,000
// small groups, range, this 2-core VM): ~15,000 page faults per call, 35-47 ms of kernel CPU against
// ~55 ms of user CPU (issue 26: a third of the loop's CPU).
// A block given back here is kept (its pages stay mapped and touched) and handed out again to a later
// request of its size class: repeated calls of one shape fault no output page (what faults still comes from
// the builder's per-batch tables, outside this file's reach).
//
// Limits: blocks under kMinRetainedBytes go to malloc and back (malloc reuses small blocks itself); a
// block is kept only while the kept total stays within the limit (output_retain_limit(), by default
// kDefaultRetainBytes), otherwise freed at once; kept memory counts in the process's resident size
// until it is reused or the limit is lowered (set_output_retain_limit(0) frees it all). Requests are
// rounded up to a size class (eight per power of two: at most 12.5% more address space than asked,
// pages past what is written are never touched).
#pragma once

#include <cstddef>
#include <memory>

namespace kafkagroup {

constexpr std::size_t kMinRetainedBytes = std::size_t{64} << 10;
// 1 GiB: the fleet loop's output at 100,000 small groups (621 MB) fits. Below it (256 MiB until 2026-11-28) the
// excess of each dropped output went back to malloc, which kept most of it resident anyway but handed
// 70-145 MB per call back to the kernel (a per-thread arena's heap is unmapped or shrunk once its top is
// free; how much depended on which thread had written which blocks), and the next call faulted that in
// again: 12-37k minor faults and 25-90 ms of kernel CPU per call on 2 threads, swinging from call to call and
// between the two threaded paths (Python queue, plan_parts). Measured, 100,000 groups, 8 calls: resident size
// after the output is dropped 1,046-1,072 MB at 256 MiB and 1,138-1,149 MB at 1 GiB (+7-10%), faults per
// call 24-37k and 1-242.
constexpr std::size_t kDefaultRetainBytes = std::size_t{1} << 30;

// A block of at least `bytes` bytes (never null; throws std::bad_alloc); its size class in `capacity`
// (what output_release takes back).
void* output_allocate(std::size_t bytes, std::size_t& capacity);
// Takes back a block of output_allocate (any thread): kept for reuse within the limit, else freed.
void output_release(void* block, std::size_t capacity) noexcept;

std::size_t output_retain_limit();
// Sets the limit; kept blocks beyond the new limit are freed now.
void set_output_retain_limit(std::size_t bytes);
// Bytes kept now (blocks given back and not yet reused).
std::size_t output_retained_bytes();

struct OutputRelease {
    std::size_t capacity = 0;
    void operator()(const void* block) const noexcept { output_release(const_cast<void*>(block), capacity); }
};

template <class T>
using OutputPtr = std::unique_ptr<T[], OutputRelease>;

// n elements of a trivial type T, uninitialised (at least one element's room, so never a null pointer).
template <class T>
OutputPtr<T> allocate_output(std::size_t n) {
    std::size_t capacity = 0;
    void* block = output_allocate((n ? n : 1) * sizeof(T), capacity);
    return OutputPtr<T>(static_cast<T*>(block), OutputRelease{capacity});
}

}  // namespace kafkagroup
