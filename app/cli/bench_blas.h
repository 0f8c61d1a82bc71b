// `bench --blas`: OpenBLAS sgemm against our matmul at the GEMM shapes a
// phase of the RL step issued, as production engines would call a vendor
// library there.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "kernels/kernels.h"

namespace mlk::cli {

// OpenBLAS picks its kernels for the CPU when the library loads. Debian 12's
// 0.3.21 does not know CPUs newer than itself (an Emerald Rapids Xeon, family
// 6 model 207, among them) and falls back to its generic "Prescott" kernels:
// they run a dense-small step's GEMMs at 28-31 GFLOP/s, its SkylakeX kernels
// at 136-159, so the comparison would be with a crippled library. So before the
// bench does any work this re-executes the process (`args` are bench's own)
// with OPENBLAS_CORETYPE naming the kernels for the instructions the CPU has
// (SkylakeX for AVX-512, Haswell for AVX2). It changes nothing when OpenBLAS
// knew the CPU, when the user set OPENBLAS_CORETYPE, or when the CPU has
// neither; it returns when it did not re-execute.
void use_openblas_kernels_for_this_cpu(const std::vector<std::string>& args);

// Which OpenBLAS kernels run, and who chose them.
struct OpenblasCore {
    std::string core;       // openblas_get_corename(), e.g. "SkylakeX"
    std::string chosen_by;  // "openblas" (its detection), "environment" (the user's OPENBLAS_CORETYPE) or "bench"
    std::string detected;   // chosen_by "bench": what OpenBLAS's own detection had picked
};
OpenblasCore openblas_core();

struct GemmComparison {
    size_t shapes = 0;       // distinct (op, M, K, N)
    double gflop = 0;        // per step
    double ours_ms = 0;      // per step: every call of the log once more, alone, with our kernels
    double openblas_ms = 0;  // the same calls with cblas_sgemm, on as many threads
};

// `log` holds the calls of `steps` steps; the figures are per step. Our
// matmul runs in `family` with fp32 storage (the phase's rounding and FP8
// quantisation are left out on both sides: the comparison is of the GEMMs).
GemmComparison compare_with_openblas(const GemmShapeLog& log, Family family, int steps);

}  // namespace mlk::cli
