// A hash index over a fixed table of names (topic names of the metadata shared by a fleet): built
// once, then each batch looks up only its own distinct names. Why: looking a batch's names up by
// scanning or re-hashing the whole table (pyarrow.compute.index_in) costs O(table) per batch, so a
// fleet of B batches paid O(B x table): 40 ms per batch at 200k names. Here a batch costs O(its names).
//
// Names arrive as Arrow's string layout (offsets into one byte buffer) and are copied: the index
// does not borrow the caller's memory. Capacity: up to 2^63 bytes; memory ~ bytes + ~40 B per name.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "kafkagroup/problem.hpp"

namespace kafkagroup {

class NameIndex {
public:
    // Names i = bytes[offsets[i] - offsets[0], offsets[i+1] - offsets[0]); a name that repeats keeps
    // its first row. Throws std::invalid_argument when the offsets do not fit the bytes.
    NameIndex(const View<int64_t>& offsets, const View<uint8_t>& bytes);
    NameIndex(const NameIndex&) = delete;             // the map holds views into bytes_
    NameIndex& operator=(const NameIndex&) = delete;

    std::size_t size() const { return num_names_; }

    // Row of each name (same layout as the constructor's), or -1 when the table does not hold it.
    std::vector<int64_t> lookup(const View<int64_t>& offsets, const View<uint8_t>& bytes) const;

private:
    std::string bytes_;
    std::size_t num_names_ = 0;
    std::unordered_map<std::string_view, int64_t> row_;
};

}  // namespace kafkagroup
