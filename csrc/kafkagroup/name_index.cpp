#include "kafkagroup/name_index.hpp"

#include <stdexcept>

namespace kafkagroup {
namespace {

// Checks that `offsets` (n+1 entries, non-decreasing) address `bytes`; returns n.
std::size_t check_layout(const View<int64_t>& offsets, const View<uint8_t>& bytes, const char* what) {
    if (offsets.empty()) throw std::invalid_argument(std::string(what) + ": expected n+1 offsets, got 0");
    for (std::size_t i = 0; i + 1 < offsets.size; ++i)
        if (offsets[i + 1] < offsets[i])
            throw std::invalid_argument(std::string(what) + ": offsets decrease at name " + std::to_string(i));
    if (static_cast<uint64_t>(offsets[offsets.size - 1] - offsets[0]) > bytes.size)
        throw std::invalid_argument(std::string(what) + ": offsets run past the " + std::to_string(bytes.size) +
                                    " bytes given");
    return offsets.size - 1;
}

}  // namespace

NameIndex::NameIndex(const View<int64_t>& offsets, const View<uint8_t>& bytes) {
    num_names_ = check_layout(offsets, bytes, "name index");
    const int64_t base = offsets[0];
    if (bytes.size) bytes_.assign(reinterpret_cast<const char*>(bytes.data), static_cast<std::size_t>(offsets[num_names_] - base));
    row_.reserve(num_names_);
    for (std::size_t i = 0; i < num_names_; ++i) {
        std::string_view name(bytes_.data() + (offsets[i] - base), static_cast<std::size_t>(offsets[i + 1] - offsets[i]));
        row_.emplace(name, static_cast<int64_t>(i));   // keeps the first row of a repeated name
    }
}

std::vector<int64_t> NameIndex::lookup(const View<int64_t>& offsets, const View<uint8_t>& bytes) const {
    const std::size_t n = check_layout(offsets, bytes, "name lookup");
    const int64_t base = offsets[0];
    const char* data = reinterpret_cast<const char*>(bytes.data);
    std::vector<int64_t> rows(n, -1);
    for (std::size_t i = 0; i < n; ++i) {
        auto it = row_.find(std::string_view(data + (offsets[i] - base), static_cast<std::size_t>(offsets[i + 1] - offsets[i])));
        if (it != row_.end()) rows[i] = it->second;
    }
    return rows;
}

}  // namespace kafkagroup
