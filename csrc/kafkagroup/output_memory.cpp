// The kept output blocks: one free list per size class under one mutex (a few allocations per batch of
// groups, so the lock is never busy). The state is created once and never destroyed: arrays exported to
// a consumer may be released during interpreter shutdown, after static destructors would have run.
#include "kafkagroup/output_memory.hpp"

#include <cstdlib>
#include <iterator>
#include <map>
#include <mutex>
#include <new>
#include <vector>

namespace kafkagroup {
namespace {

struct Retained {
    std::mutex mutex;
    std::map<std::size_t, std::vector<void*>> free_lists;   // size class -> kept blocks
    std::size_t bytes = 0;
    std::size_t limit = kDefaultRetainBytes;
};

Retained& retained() {
    static Retained* state = new Retained();   // never destroyed (see above)
    return *state;
}

// `bytes` rounded up to its class: 8 classes per power of two (the top 4 bits of the size kept).
std::size_t size_class(std::size_t bytes) {
    int top = 0;
    while ((bytes >> top) > 15) ++top;
    const std::size_t step = std::size_t{1} << top;
    return (bytes + step - 1) / step * step;
}

// Frees kept blocks, largest classes first, until at most `limit` bytes are kept (mutex held).
void trim_locked(Retained& r, std::size_t limit) {
    while (r.bytes > limit && !r.free_lists.empty()) {
        auto last = std::prev(r.free_lists.end());
        std::vector<void*>& blocks = last->second;
        std::free(blocks.back());
        blocks.pop_back();
        r.bytes -= last->first;
        if (blocks.empty()) r.free_lists.erase(last);
    }
}

}  // namespace

void* output_allocate(std::size_t bytes, std::size_t& capacity) {
    if (bytes < kMinRetainedBytes) {
        capacity = bytes;
        void* block = std::malloc(bytes ? bytes : 1);
        if (!block) throw std::bad_alloc();
        return block;
    }
    capacity = size_class(bytes);
    Retained& r = retained();
    {
        const std::lock_guard<std::mutex> lock(r.mutex);
        // this class, or the next one up (at most 12.5% more room than the class itself)
        auto it = r.free_lists.lower_bound(capacity);
        if (it != r.free_lists.end() && it->first <= capacity + capacity / 8) {
            void* block = it->second.back();
            it->second.pop_back();
            capacity = it->first;
            r.bytes -= capacity;
            if (it->second.empty()) r.free_lists.erase(it);
            return block;
        }
    }
    void* block = std::malloc(capacity);
    if (!block) throw std::bad_alloc();
    return block;
}

void output_release(void* block, std::size_t capacity) noexcept {
    if (!block) return;
    if (capacity >= kMinRetainedBytes) {
        Retained& r = retained();
        const std::lock_guard<std::mutex> lock(r.mutex);
        if (r.bytes + capacity <= r.limit) {
            try {
                r.free_lists[capacity].push_back(block);
                r.bytes += capacity;
                return;
            } catch (...) {   // no room for the list entry: free the block instead
            }
        }
    }
    std::free(block);
}

std::size_t output_retain_limit() {
    Retained& r = retained();
    const std::lock_guard<std::mutex> lock(r.mutex);
    return r.limit;
}

void set_output_retain_limit(std::size_t bytes) {
    Retained& r = retained();
    const std::lock_guard<std::mutex> lock(r.mutex);
    r.limit = bytes;
    trim_locked(r, bytes);
}

std::size_t output_retained_bytes() {
    Retained& r = retained();
    const std::lock_guard<std::mutex> lock(r.mutex);
    return r.bytes;
}

}  // namespace kafkagroup
