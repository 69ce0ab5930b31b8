// Shared by the C++ tests: a View (problem.hpp) of a vector the test owns, and a Problem over such vectors.
#pragma once

#include <vector>

#include "kafkagroup/problem.hpp"

namespace kafkagroup_test {

template <class T>
kafkagroup::View<T> view(const std::vector<T>& v) {
    return kafkagroup::View<T>{v.data(), v.size()};
}

// A Problem (no racks) over the columns a test keeps; an empty vector is an absent column (generation: none
// when omitted). The views point into the vectors: they must outlive the Problem.
inline kafkagroup::Problem problem_of(const std::vector<int32_t>& partition_count, const std::vector<int64_t>& sub_offsets,
                                      const std::vector<int32_t>& sub_topics, const std::vector<int64_t>& owned_offsets,
                                      const std::vector<int32_t>& owned_partitions) {
    kafkagroup::Problem p;
    p.partition_count = view(partition_count);
    p.sub_offsets = view(sub_offsets);
    p.sub_topics = view(sub_topics);
    p.owned_offsets = view(owned_offsets);
    p.owned_partitions = view(owned_partitions);
    return p;
}

inline kafkagroup::Problem problem_of(const std::vector<int32_t>& partition_count, const std::vector<int64_t>& sub_offsets,
                                      const std::vector<int32_t>& sub_topics, const std::vector<int64_t>& owned_offsets,
                                      const std::vector<int32_t>& owned_partitions, const std::vector<int32_t>& generation) {
    kafkagroup::Problem p = problem_of(partition_count, sub_offsets, sub_topics, owned_offsets, owned_partitions);
    p.generation = view(generation);
    return p;
}

}  // namespace kafkagroup_test
