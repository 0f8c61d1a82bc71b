// Run-time instruction-set selection for the CPU kernels. No -march flags are
// used: the AVX2 and AVX-512 paths are compiled with target attributes and
// chosen here with __builtin_cpu_supports. Every path computes the same bits
// for the batch-invariant family (see cpu/common.h), which the tests check by
// forcing each ISA in turn.
#pragma once

namespace mlk::cpu {

enum class Isa { scalar = 0, avx2 = 1, avx512 = 2 };

Isa detected_isa();  // the best this CPU supports
// The one in use: detected_isa(), capped by the environment variable
// MLK_ISA=scalar|avx2|avx512 (read once) or by force_isa().
Isa active_isa();
// Use `isa` (capped to detected_isa()) from now on; returns the ISA now active.
Isa force_isa(Isa isa);
const char* isa_name(Isa isa);

// Executes vzeroupper where the CPU has AVX; nothing elsewhere. Code that left
// the upper halves of the vector registers dirty (measured: Qt 6.4's solid
// fills, QImage::fill and QPainter::fillRect) makes every later switch
// between SSE and AVX code pay a state transition: a glibc log10 then takes
// ~140 ns instead of ~7 ns on this project's CI machines. Call it before a
// loop of libm calls that follows such code. (A call is ABI-safe: the upper
// halves are caller-saved.)
void clear_upper_vector_state();

}  // namespace mlk::cpu
