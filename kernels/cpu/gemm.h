// Internal: the threaded GEMM driver shared by matmul and attention, and the
// fast family's shape dispatch (exposed so tests and the bench can name the
// regime a shape falls in).
#pragma once

#include "kernels/cpu/common.h"

namespace mlk::cpu {

// Runs g over C rows [0,M) x cols [0,N); threads split rows at multiples of
// kRowQuantum and columns at multiples of 64 (never the reduction).
void run_gemm(const IsaTable& T, const GemmCall& g, int M, int N, bool allow_threads);

// fast family: number of split-K parts for an M x K problem (1 = no split-K).
int fast_splitk_parts(int M, int K, int threads);
// fast family: K block for the K-blocked regime (M > 8).
int fast_kblock(int M);
// fast family: number of KV splits for decode attention.
int fast_decode_splits(int len, int active_queries, int threads);

}  // namespace mlk::cpu
