// Runs a kernel test on every ISA path this CPU has (scalar, AVX2,
// AVX-512), each forced in turn, so every path meets the same assertions.
#pragma once

#include <gtest/gtest.h>

#include <functional>

#include "kernels/cpu/features.h"

namespace mlk::testdata {

inline void for_each_isa(const std::function<void()>& f) {
    const cpu::Isa best = cpu::detected_isa();
    for (int i = 0; i <= static_cast<int>(best); ++i) {
        const cpu::Isa isa = static_cast<cpu::Isa>(i);
        cpu::force_isa(isa);
        SCOPED_TRACE(cpu::isa_name(isa));
        f();
    }
    cpu::force_isa(best);
}

}  // namespace mlk::testdata
