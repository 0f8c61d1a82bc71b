// `bench --blas`: OpenBLAS sgemm against our matmul at the GEMM shapes a
// phase of the RL step issued, as production engines would call a vendor
// library there.
#pragma once

#include <cstddef>

#include "kernels/kernels.h"

namespace mlk::cli {

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
