#include "kernels/cpu/features.h"

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "kernels/cpu/common.h"

namespace mlk::cpu {

Isa detected_isa() {
    static const Isa isa = [] {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("avx2"))
            return Isa::avx512;
        if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return Isa::avx2;
#endif
        return Isa::scalar;
    }();
    return isa;
}

namespace {
Isa cap(Isa want) {
    Isa best = detected_isa();
    return static_cast<int>(want) < static_cast<int>(best) ? want : best;
}

std::atomic<int>& active_slot() {
    static std::atomic<int> slot = [] {
        Isa isa = detected_isa();
        if (const char* e = std::getenv("MLK_ISA")) {
            if (std::strcmp(e, "scalar") == 0) isa = cap(Isa::scalar);
            else if (std::strcmp(e, "avx2") == 0) isa = cap(Isa::avx2);
            else if (std::strcmp(e, "avx512") == 0) isa = cap(Isa::avx512);
        }
        return static_cast<int>(isa);
    }();
    return slot;
}
}  // namespace

Isa active_isa() { return static_cast<Isa>(active_slot().load(std::memory_order_relaxed)); }

Isa force_isa(Isa isa) {
    Isa c = cap(isa);
    active_slot().store(static_cast<int>(c), std::memory_order_relaxed);
    return c;
}

const char* isa_name(Isa isa) {
    switch (isa) {
        case Isa::scalar: return "scalar";
        case Isa::avx2: return "avx2";
        case Isa::avx512: return "avx512";
    }
    return "?";
}

const IsaTable& isa_table() {
    switch (active_isa()) {
#if defined(__x86_64__) || defined(__i386__)
        case Isa::avx512: return avx512_table();
        case Isa::avx2: return avx2_table();
#endif
        default: return scalar_table();
    }
}

#if defined(__x86_64__) || defined(__i386__)
namespace {
__attribute__((target("avx"))) void vzeroupper() { __builtin_ia32_vzeroupper(); }
}  // namespace
#endif

void clear_upper_vector_state() {
#if defined(__x86_64__) || defined(__i386__)
    static const bool hasAvx = [] {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx") != 0;
    }();
    if (hasAvx) vzeroupper();
#endif
}

}  // namespace mlk::cpu
