// Shared by the C++ tests: a View (problem.hpp) of a vector the test owns.
#pragma once

#include <vector>

#include "kafkagroup/problem.hpp"

namespace kafkagroup_test {

template <class T>
kafkagroup::View<T> view(const std::vector<T>& v) {
    return kafkagroup::View<T>{v.data(), v.size()};
}

}  // namespace kafkagroup_test
