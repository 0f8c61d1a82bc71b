// The op set of kernels/kernels.h on a CUDA device. Every function has the
// same name, argument order (llm.c: outputs, inputs, weights, sizes),
// shapes and meaning as its CPU counterpart in namespace mlk, but every
// pointer argument is DEVICE memory (tensors, token ids, positions, KV-cache
// slots and lengths alike); sizes and Exec are host values. Ops are enqueued
// on the calling thread's stream (device.h) and return before they finish.
//
// The two families, as on the CPU (each definition states its plan):
//  - Family::batch_invariant is ours: the per-thread arithmetic is the MLK_HD
//    code of bodies.h / bodies_attention.h, one reduction order per reduced
//    length, explicit fmaf, no contraction, exp/log from kernels/scalar_math.h.
//    With any storage precision its outputs equal the CPU batch-invariant
//    kernels' bit for bit (cuda_bodies_test runs those bodies on the host
//    against the CPU; cuda_ops_test checks the device).
//  - Family::fast is what production engines run: small GEMMs (decode's) in
//    a split-K kernel whose split follows the shape, large ones in cuBLAS
//    with its own heuristics, split-KV decode and tiled online-softmax prefill
//    attention, row kernels whose split follows the shape, CUDA's libm
//    (expf, logf, rsqrtf). Its bits depend on M and the device; they are not
//    the CPU fast family's bits.
// The backward ops, the family-free forward ops (RoPE, SwiGLU, embedding,
// residual add, fp8 quantisation, the router's top-k) and the AdamW step have
// one deterministic plan, the CPU's, and equal the CPU bit for bit.
//
// Not provided (host-side only): set_num_threads, the work accounting and
// the fp8 scale helpers (fp8_scale, fp8_activation_floor, the scale counts).
#pragma once

#include <cstdint>

#include "kernels/cuda/device.h"
#include "kernels/kernels.h"

namespace mlk::cuda {

void matmul_forward(const Exec& ex, float* out, const float* inp, const float* w, const float* bias, int M, int K,
                    int N);
void matmul_backward(float* dinp, float* dw, float* dbias, const float* dout, const float* inp, const float* w, int M,
                     int K, int N, GradStore dinp_store = GradStore::add);

void rmsnorm_forward(const Exec& ex, float* out, float* rstd, const float* inp, const float* weight, float eps, int M,
                     int C);
void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                      const float* rstd, int M, int C, GradStore dinp_store = GradStore::add);

void rope_forward(float* x, const int32_t* pos, int M, int H, int D, float theta, Dtype dtype, Dtype point = Dtype::f32,
                  Dtype cache = Dtype::f32);
void rope_backward(float* dx, const int32_t* pos, int M, int H, int D, float theta);

void attention_forward(const Exec& ex, float* out, float* att, const float* q, const float* k, const float* v, int B,
                       int T, int H, int Hkv, int D);
void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* att, const float* q,
                        const float* k, const float* v, int B, int T, int H, int Hkv, int D,
                        GradStore store = GradStore::add);
// cache_stride / (Hkv * D) is taken as the cache's capacity Tmax (every
// len[s] <= Tmax), as the [Tmax, Hkv, D] slot layout of kernels.h implies.
void attention_decode(const Exec& ex, float* out, const float* q, const float* kcache, const float* vcache,
                      const int32_t* slot, const int32_t* len, int64_t cache_stride, int Bq, int H, int Hkv, int D);

void logsoftmax_forward(const Exec& ex, float* lp, const float* logits, float inv_temp, int M, int V);
void logsoftmax_backward(float* dlogits, const float* dlp, const float* lp, float inv_temp, int M, int V);
void logprob_gather(float* out, const float* lp, const int32_t* target, int M, int V);
void entropy_forward(const Exec& ex, float* ent, const float* lp, int M, int V);

void swiglu_forward(const Exec& ex, float* out, const float* gate, const float* up, int64_t n);
void swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate, const float* up, int64_t n,
                     GradStore store = GradStore::add);

void embedding_forward(float* out, const int32_t* tok, const float* table, int M, int C, Dtype dtype);
void embedding_backward(float* dtable, const float* dout, const int32_t* tok, int M, int C);

void router_topk_forward(const Exec& ex, int32_t* ids, float* weights, const float* logits, int M, int E, int k);
void router_replay_forward(const Exec& ex, float* weights, const float* logits, const int32_t* ids, int M, int E,
                           int k);
void router_backward(float* dlogits, const float* dweights, const float* weights, const int32_t* ids, int M, int E,
                     int k);
// slot_rows: a device array of M*k device row pointers.
void moe_combine_forward(const Exec& ex, float* out, const float* const* slot_rows, const float* weights, int M, int k,
                         int D);
void moe_combine_backward(float* dy, float* dweights, const float* dout, const float* y, const float* weights,
                          const int32_t* slots, int n, int k, int D);

// scales: device memory (or null), as many as kernels.h's fp8_*_scale_count.
void quantize_activations(float* out, float* scales, const float* inp, int M, int K, Dtype fmt, Fp8Scale kind,
                          Fp8Granularity g);
void quantize_weight(float* w, float* scales, int K, int N, Dtype fmt, Fp8Scale kind, Fp8Granularity g);
void store_kv_fp8(uint8_t* codes, float* scales, const int64_t* off, float* x, int M, int Hkv, int hd, Dtype fmt,
                  Fp8Scale kind);
void load_kv_fp8(float* out, const uint8_t* codes, const float* scales, const int32_t* slot, const int32_t* len,
                 int64_t cache_stride, int span, int Bq, int Hkv, int hd, Dtype fmt);

void add_inplace(float* y, const float* x, int64_t n, Dtype dtype);
// Offsets (device arrays, or null) as mlk::copy_rows.
void copy_rows(float* dst, const int64_t* dst_off, const float* src, const int64_t* src_off, int M, int C);

// One AdamW step over n parameters, as mlk::adamw_update: params, m and v are
// updated in place, grads read (all device memory); s is a host value (the
// caller's grad_scale and bias corrections). One element per thread in double
// precision, the CPU's per-element code (fmath::adamw_at): the CPU's bits.
void adamw_update(float* params, float* m, float* v, const float* grads, int64_t n, const AdamWStep& s);
// Rounds n floats in place (no-op for f32), as mlk::round_buffer.
void round_buffer(float* x, size_t n, Dtype d);

}  // namespace mlk::cuda
