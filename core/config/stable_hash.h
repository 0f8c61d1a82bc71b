// FNV-1a, a 64-bit string hash that is the same on every build and platform
// (std::hash is neither): names of cached base policies, sweep identities and
// the task's train/held-out split are stored or cached, so they must not move.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>

namespace mlk {

inline constexpr uint64_t kFnvOffsetBasis = 0xcbf29ce484222325ull;
// Sweep identities and base-policy cache names use this basis, a digit short
// of FNV's: stored sweeps and cached base policies are named with it, and
// another basis would no longer find them.
inline constexpr uint64_t kStoredNameBasis = 1469598103934665603ull;

inline uint64_t fnv1a(std::string_view s, uint64_t basis = kFnvOffsetBasis) {
    uint64_t h = basis;
    for (const unsigned char c : s) {
        h ^= c;
        h *= 0x100000001b3ull;
    }
    return h;
}

// The hash as 16 lower-case hex digits.
inline std::string fnv1a_hex(std::string_view s, uint64_t basis = kFnvOffsetBasis) {
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", (unsigned long long)fnv1a(s, basis));
    return hex;
}

}  // namespace mlk
