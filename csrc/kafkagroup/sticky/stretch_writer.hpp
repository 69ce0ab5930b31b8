// owner[] written in partition order over the array of the previous owners it replaces, through a buffer
// of one stretch (kStretch partitions). Internal to sticky/ (the uniform builder with previous owners).
//
// Why: the builder reads each partition's previous owner once, in partition order, and decides its new
// owner right there. Writing the result over the same array keeps one P-sized array per call instead of two
// (the second one cost a write of 16 MB at 4M partitions, and, allocated afresh per call, its page faults:
// more system time than the whole pass). The new owners of a stretch collect in the buffer while the
// previous owners stay in place; once the stretch is full, the cooperative transfers and the metrics'
// tally read both while they are in the cache (128 KB each), and the buffer is copied over the stretch.
// The builder only reads previous owners at or after the partition it writes next, never overwritten yet.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>

#include "kafkagroup/metrics.hpp"
#include "kafkagroup/runs.hpp"
#include "kafkagroup/sticky/sticky.hpp"

namespace kafkagroup {
namespace sticky {

class StretchWriter {
public:
    static constexpr int32_t kStretch = PartitionTally::kTallyChunk;

    // `owner`: the previous owners of `partitions` partitions, overwritten; `tally`, `transfers` may be null.
    // The buffer holds one stretch, or all the partitions when they are fewer, and is not filled first: a
    // zero-filled 128 KB buffer per call cost ~1.8 us (a 100-partition sticky call after churn: 4.0 -> 2.2 us).
    StretchWriter(int32_t* owner, int32_t partitions, PartitionTally* tally, Transfers* transfers)
        : owner_(owner), tally_(tally), transfers_(transfers),
          buffer_(new int32_t[static_cast<std::size_t>(std::clamp(partitions, 1, kStretch))]),
          capacity_(std::clamp(partitions, 1, kStretch)) {}

    void push(int32_t m) {
        buffer_[static_cast<std::size_t>(fill_++)] = m;
        if (fill_ == capacity_) flush();
    }
    void append(int64_t n, int32_t m) {
        while (n > 0) {
            const int32_t k = static_cast<int32_t>(std::min<int64_t>(n, capacity_ - fill_));
            fill_run(buffer_.get() + fill_, static_cast<std::size_t>(k), m);
            fill_ += k;
            n -= k;
            if (fill_ == capacity_) flush();
        }
    }
    // After the last partition.
    void finish() { flush(); }

private:
    void flush() {
        if (fill_ == 0) return;
        int32_t* const now = buffer_.get();
        const int32_t* const before = owner_ + begin_;
        if (transfers_) transfers_->withhold(begin_, fill_, now, before);   // before the tally: withheld count as free
        if (tally_) tally_->count_stretch(begin_ + fill_, now, before);
        std::memcpy(owner_ + begin_, now, static_cast<std::size_t>(fill_) * sizeof(int32_t));
        begin_ += fill_;
        fill_ = 0;
    }

    int32_t* const owner_;
    PartitionTally* const tally_;
    Transfers* const transfers_;
    const std::unique_ptr<int32_t[]> buffer_;
    const int32_t capacity_;   // entries of buffer_
    int32_t begin_ = 0;   // the stretch's first partition
    int32_t fill_ = 0;    // its partitions written so far
};

}  // namespace sticky
}  // namespace kafkagroup
