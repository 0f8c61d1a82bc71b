// The CPU backend's side of the work accounting in kernels.h: the entry
// points report what they are about to do.
#pragma once

#include "kernels/kernels.h"

namespace mlk::cpu {

void count_flops(double flop);
// Counts 2*M*K*N flops and, when a shape log is set, the shape.
void count_gemm(char op, int M, int K, int N);
// The calling thread's shape log (set_gemm_shape_log), or null.
GemmShapeLog* gemm_shape_log();

}  // namespace mlk::cpu
