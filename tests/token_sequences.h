// Seeded random token sequences for the engine and model suites: each is
// Vocab::bos then min_len + (0 .. len_spread - 1) tokens of the first 40
// characters, drawn by hash from (seed, sequence, position), so a suite's
// batch never depends on another's.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model/model.h"
#include "core/model/vocab.h"

namespace mlk::testdata {

inline std::vector<std::vector<int32_t>> token_sequences(int n, uint64_t seed, int min_len, int len_spread) {
    std::vector<std::vector<int32_t>> out;
    for (int i = 0; i < n; ++i) {
        std::vector<int32_t> s{Vocab::bos};
        const int len = min_len + (int)(hash_u64(seed, i) % (uint64_t)len_spread);
        for (int t = 0; t < len; ++t) s.push_back(Vocab::first_char + (int)(hash_u64(seed, i, t + 1) % 40));
        out.push_back(s);
    }
    return out;
}

}  // namespace mlk::testdata
