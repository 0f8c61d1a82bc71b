// Bitwise comparison of float buffers for the kernel suites: the first
// element that differs, with both values and their bit patterns.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "kernels/dtype.h"

namespace mlk::testdata {

// A float's bit pattern as 0x%08x. (Streamed into a gtest message, std::hex
// does not reach the number: each << goes to a fresh stream.)
inline std::string hex_bits(float x) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08x", (unsigned)float_bits(x));
    return buf;
}

inline ::testing::AssertionResult bits_equal(const std::vector<float>& got, const std::vector<float>& want) {
    if (got.size() != want.size())
        return ::testing::AssertionFailure() << "size " << got.size() << " vs " << want.size();
    for (size_t i = 0; i < got.size(); ++i)
        if (float_bits(got[i]) != float_bits(want[i]))
            return ::testing::AssertionFailure() << "element " << i << ": " << got[i] << " (" << hex_bits(got[i])
                                                 << ") vs " << want[i] << " (" << hex_bits(want[i]) << ")";
    return ::testing::AssertionSuccess();
}

// How many elements differ in their bits (the buffers have one length).
inline size_t count_diff(const std::vector<float>& a, const std::vector<float>& b) {
    size_t n = 0;
    for (size_t i = 0; i < a.size(); ++i) n += float_bits(a[i]) != float_bits(b[i]);
    return n;
}

}  // namespace mlk::testdata
