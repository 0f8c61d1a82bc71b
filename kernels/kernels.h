// The op set every backend implements: the CPU backend (kernels/cpu/) here in
// namespace mlk, the CUDA backend (kernels/cuda/ops.h) with the same signatures
// in namespace mlk::cuda. Argument order follows llm.c:
// outputs, inputs, weights, sizes. Shapes are in the comments; every buffer is
// row-major fp32 storage whose values may be rounded to a narrower Dtype.
//
// Two kernel families share these entry points, chosen by Exec::family:
//  - Family::fast dispatches by shape like real inference/training libraries
//    (split-K for small M, K-blocked accumulation for large M, split-KV decode
//    attention, blocked online-softmax prefill attention, row reductions whose
//    chunking follows batch size and thread count). Its bits depend on M.
//  - Family::batch_invariant uses one reduction order per reduced length,
//    independent of M, batch composition, row position and thread count.
// Each definition (kernels/cpu/*.cpp, kernels/cuda/*.cu) states its reduction
// plan in a comment.
//
// Linear weights are stored [in, out] (K x N) so the batch-invariant matmul can
// vectorise along N while every output keeps one sequential FMA chain over K.
// Checkpoints transpose to Hugging Face's [out, in] on the way out.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <tuple>

#include "kernels/dtype.h"

namespace mlk {

enum class Family { fast, batch_invariant };

// How an fp8 quantiser picks its scale s (x is stored as round_fp8(x / s)):
//  - fp32: s = amax / fp8_max(fmt) as an fp32 quotient (1 for an all-zero
//    block), as vLLM and SGLang compute it;
//  - pow2: the smallest power of two with amax / s <= fp8_max (UE8M0, as MXFP8
//    and DeepSeek's recipes use): dividing and multiplying back are exact.
enum class Fp8Scale : uint8_t { fp32, pow2 };
// Which values share one scale:
//  - tensor: one dynamic scale per activation tensor (all rows of the call)
//    and one per weight tensor;
//  - channel: one per activation row (token) and one per weight output
//    column (per-token x per-channel);
//  - block: one per 1x128 slice of an activation row and one per 128x128
//    block of a weight (DeepSeek-V3 / SGLang block FP8), the last block of a
//    row or column shorter where K or N is not a multiple of 128.
enum class Fp8Granularity : uint8_t { tensor, channel, block };
inline constexpr int kFp8Block = 128;

// How an engine computes: the kernel family and its rounding points (the
// numerics profile's, core/engines). Every point is real rounding
// (round-to-nearest-even; fp8 saturating with scales), applied where a fused
// production kernel stores that intermediate narrow:
//  - dtype: storage of every kernel output (activations); never fp8.
//  - probs: attention's probability tile P, rounded before P.V while the
//    softmax normaliser sums the unrounded P (FlashAttention's P tile).
//  - stats: RMSNorm's 1/rms, log-softmax's log-sum-exp and attention's
//    softmax normaliser, as stored by a kernel that keeps them narrow.
//  - norm: RMSNorm's x * (1/rms), rounded to this before the weight
//    multiply (bf16: Hugging Face's and vLLM's `weight * x.to(dtype)`, two
//    roundings); fp32: x * r * w rounded once (fused kernels).
//  - silu: SwiGLU's silu(gate), rounded to this before it multiplies up
//    (bf16: vLLM's silu_and_mul and Hugging Face's act_fn(gate) * up); fp32:
//    silu(gate) * up rounded once.
//  - rope_cache: RoPE's cos/sin as its cache stores them (bf16: vLLM's and
//    Hugging Face's caches cast to the model dtype; fp32: flashinfer's, TE's).
//  - rope: the rotation's arithmetic: each product and sum rounded to this
//    (bf16: Hugging Face's `q * cos + rotate_half(q) * sin` in bf16 ops); fp32:
//    the rotation in fp32, rounded once to dtype (vLLM's and flashinfer's kernels).
//  - eager_softmax: attention normalises P (fp32 exp(s - m) / sum) before
//    rounding it to probs and multiplying V (eager attention's softmax then
//    P.V), instead of dividing P.V by the sum afterwards (FlashAttention).
//  - quant: fp32 = none; fp8_e4m3 / fp8_e5m2 = every matmul input is
//    quantised dynamically with quant_scale at quant_granularity, and the
//    weights are expected quantised the same way (quantize_weight): W8A8 with
//    fp32 accumulation over the dequantised values.
struct Exec {
    Family family = Family::fast;
    Dtype dtype = Dtype::f32;
    Dtype probs = Dtype::f32;
    Dtype stats = Dtype::f32;
    Dtype quant = Dtype::f32;
    Dtype norm = Dtype::f32;
    Dtype silu = Dtype::f32;
    Dtype rope = Dtype::f32;
    Dtype rope_cache = Dtype::f32;
    bool eager_softmax = false;
    Fp8Scale quant_scale = Fp8Scale::fp32;
    Fp8Granularity quant_granularity = Fp8Granularity::channel;
};

// ---- threads -------------------------------------------------------------
// Kernels run on a process-wide pool. The count is the calling thread's own
// (0 = hardware concurrency): the fast family's plans read it, so a setting
// made on one thread never changes another thread's bits.
void set_num_threads(int n);
int num_threads();
int default_num_threads();  // the count of a thread that set none
// Runs task(i) for i = 0..n-1 across the pool, for many small independent
// kernels that would each leave threads idle (an MoE layer's experts: a
// grouped GEMM). Each thread claims the next task as it finishes one, largest
// cost[i] first (cost may be null: index order). Kernels called inside a task
// run on their thread alone and plan with the caller's thread count, and the
// work they do is counted as the caller's (kernel_flop_count, the GEMM shape
// log), so every output has exactly the bits of running the tasks one after
// another. Tasks must write disjoint outputs. The first exception a task
// throws is rethrown here after the others finished.
void parallel_tasks(int n, const double* cost, const std::function<void(int)>& task);
// The same with task(i, worker): worker in [0, parallel_task_workers(n)) names
// the thread running the task, no two at once, for scratch the caller owns
// per thread and frees when the call returns.
void parallel_tasks(int n, const double* cost, const std::function<void(int i, int worker)>& task);
int parallel_task_workers(int n);
// The GEMM tiles read B from packed copies of its column panels (on by
// default). Off is for `mismatch-lab-bench-kernels --pack-ab`, which times
// both; the bits are the same either way. Process-wide.
void set_gemm_packing(bool on);
bool gemm_packing();

// ---- work accounting -----------------------------------------------------
// The floating-point operations (2 per multiply-add) of the matmul and
// attention calls the calling thread made since it started: `bench` reads the
// difference around each phase of an RL step, so its GFLOP/s counts the work
// the kernels did, not an estimate of it. Row ops (norms, softmax, RoPE) are
// left out: they are under 1% of the multiply-adds at these sizes.
double kernel_flop_count();
// Adds work done for the calling thread elsewhere: a device's kernels, which
// the engines' device path (core/engines/device_model.h) counts with the
// formulas the CPU kernels use, so a phase on a GPU counts the same FLOPs.
void count_kernel_flops(double flop);
// One GEMM as the matmul entry points issue it: op 'f' out[M,N] = A[M,K] @ B[K,N];
// 'd' dinp[M,K] += dout[M,N] @ w[K,N]^T; 'w' dw[K,N] += inp[M,K]^T @ dout[M,N].
struct GemmShape {
    char op = 'f';
    int M = 0, K = 0, N = 0;
    auto operator<=>(const GemmShape&) const = default;
};
using GemmShapeLog = std::map<GemmShape, int64_t>;  // shape -> calls
// While set (non-null) on a thread, its matmul calls count their shapes into
// `log` (bench --blas times OpenBLAS at exactly these shapes).
void set_gemm_shape_log(GemmShapeLog* log);

// The FP32 FMA throughput of `threads` threads on this CPU's widest ISA,
// GFLOP/s: 12 independent FMA chains per thread for about 0.1 s, best of 3.
// The peak every "% of peak" figure is taken against.
double fma_peak_gflops(int threads);

// How a backward op stores an input gradient: added to the buffer (the
// default: the gradients of a tensor's several uses sum), or written over it,
// which spares zeroing a fresh buffer first (a dense-small backward zeroed
// ~100 MB per layer). Written over gives the values of adding into zeros: an
// FMA chain starts from 0.0f either way, and 0 + t = t up to the sign of a zero.
enum class GradStore : uint8_t { add, overwrite };

// ---- matmul --------------------------------------------------------------
// out[M,N] = inp[M,K] @ w[K,N] (+ bias[N] when non-null), rounded to ex.dtype.
void matmul_forward(const Exec& ex, float* out, const float* inp, const float* w, const float* bias, int M, int K,
                    int N);
// dinp[M,K] += dout[M,N] @ w[K,N]^T ; dw[K,N] += inp^T @ dout ; dbias[N] += sum_m dout.
// Any of dinp / dw / dbias may be null. Deterministic: fixed order independent
// of thread count. With dinp_store = overwrite, dinp = dout @ w^T.
void matmul_backward(float* dinp, float* dw, float* dbias, const float* dout, const float* inp, const float* w, int M,
                     int K, int N, GradStore dinp_store = GradStore::add);

// ---- RMSNorm -------------------------------------------------------------
// out[M,C] = inp * rsqrt(mean(inp^2) + eps) * weight[C]; rstd[M] saved when non-null.
void rmsnorm_forward(const Exec& ex, float* out, float* rstd, const float* inp, const float* weight, float eps, int M,
                     int C);
// dinp[M,C] += ... (or =, dinp_store), dweight[C] += ... (dweight may be null).
void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                      const float* rstd, int M, int C, GradStore dinp_store = GradStore::add);

// ---- RoPE (rotate-half, Hugging Face convention) -------------------------
// x[M,H,D] rotated in place for positions pos[M]; D even; theta the base.
// Angles come from a double-precision table so every engine sees the same bits.
// cache (Exec::rope_cache): cos and sin rounded to it, as a cache of that
// precision holds them. point (Exec::rope): f32 rotates in fp32 and rounds
// once to dtype; bf16 / f16 round each product and each sum to it, then to dtype.
void rope_forward(float* x, const int32_t* pos, int M, int H, int D, float theta, Dtype dtype, Dtype point = Dtype::f32,
                  Dtype cache = Dtype::f32);
// Inverse rotation of the gradient, in place.
void rope_backward(float* dx, const int32_t* pos, int M, int H, int D, float theta);

// ---- attention -----------------------------------------------------------
// Causal self-attention over whole sequences (prefill / training).
// q[B,T,H,D], k,v[B,T,Hkv,D] (H a multiple of Hkv: grouped-query attention),
// out[B,T,H,D], att[B,H,T,T] = softmax probabilities saved for backward
// (may be null). Scale 1/sqrt(D).
void attention_forward(const Exec& ex, float* out, float* att, const float* q, const float* k, const float* v, int B,
                       int T, int H, int Hkv, int D);
// dq, dk, dv (+=, or = with store = overwrite) from dout using the saved att.
void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* att, const float* q,
                        const float* k, const float* v, int B, int T, int H, int Hkv, int D,
                        GradStore store = GradStore::add);
// Decode: one new query per active sequence against its KV cache.
// q[Bq,H,D]; kcache/vcache hold slot s at kcache + slot[s]*cache_stride, each
// laid out [Tmax,Hkv,D]; len[s] = number of valid positions including the new
// one. out[Bq,H,D].
void attention_decode(const Exec& ex, float* out, const float* q, const float* kcache, const float* vcache,
                      const int32_t* slot, const int32_t* len, int64_t cache_stride, int Bq, int H, int Hkv, int D);

// ---- softmax family ------------------------------------------------------
// lp[M,V] = log_softmax(logits * inv_temp) per row.
void logsoftmax_forward(const Exec& ex, float* lp, const float* logits, float inv_temp, int M, int V);
// dlogits[M,V] += inv_temp * (dlp - softmax * sum_v dlp) per row.
void logsoftmax_backward(float* dlogits, const float* dlp, const float* lp, float inv_temp, int M, int V);
// out[M] = lp[m, target[m]].
void logprob_gather(float* out, const float* lp, const int32_t* target, int M, int V);
// ent[M] = -sum_v exp(lp) * lp, a row reduction.
void entropy_forward(const Exec& ex, float* ent, const float* lp, int M, int V);

// ---- MLP pieces ----------------------------------------------------------
// out[M,F] = silu(gate) * up.
void swiglu_forward(const Exec& ex, float* out, const float* gate, const float* up, int64_t n);
// dgate, dup (+=, or = with store = overwrite).
void swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate, const float* up, int64_t n,
                     GradStore store = GradStore::add);

// ---- embedding -----------------------------------------------------------
// out[M,C] = table[tok[m], :] (rounded to dtype).
void embedding_forward(float* out, const int32_t* tok, const float* table, int M, int C, Dtype dtype);
// dtable[V,C] += scatter of dout in row order m = 0..M-1.
void embedding_backward(float* dtable, const float* dout, const int32_t* tok, int M, int C);

// ---- MoE router ----------------------------------------------------------
// Hugging Face Qwen3-MoE: probs = softmax(logits[M,E]); pick top-k (ties: lower
// expert id first), renormalise to sum 1 (norm_topk_prob = true), i.e. a
// softmax over the selected logits. ids[M,k] in descending probability;
// weights[M,k] rounded to dtype.
void router_topk_forward(const Exec& ex, int32_t* ids, float* weights, const float* logits, int M, int E, int k);
// R3: the experts are given (ids from the rollout); weights = softmax over the
// *training* logits of those experts, so the router keeps its gradient.
void router_replay_forward(const Exec& ex, float* weights, const float* logits, const int32_t* ids, int M, int E,
                           int k);
// dlogits[M,E] += d weights through the softmax over the selected logits.
void router_backward(float* dlogits, const float* dweights, const float* weights, const int32_t* ids, int M, int E,
                     int k);

// The MoE layer's output: out[m,d] = round(w[m,0] * y_0[d] + ... + w[m,k-1] *
// y_{k-1}[d]) where y_j = slot_rows[m*k + j] is the output row of token m's
// j-th expert (slot order: descending router probability). One fp32 FMA chain
// per token and channel over the slots in order, from 0.0f, then rounded to
// ex.dtype; per token, so batch-invariant by construction and the same in
// both families.
void moe_combine_forward(const Exec& ex, float* out, const float* const* slot_rows, const float* weights, int M, int k,
                         int D);
// Its backward for the n slots one expert serves (slots[r]: the slot of the
// expert's row r, token m = slots[r] / k; y[n,D]: the expert's output rows):
//   dy[r,d] = weights[slots[r]] * dout[m,d]   (one fp32 product)
//   dweights[slots[r]] = (float)(dout[m,0]*y[r,0] + ... + dout[m,D-1]*y[r,D-1])
// the dot one double chain over d ascending from 0.0 (each product of two
// floats is exact in double, so fused or not gives the same bits). One thread:
// the MoE backward runs each expert on its own thread.
void moe_combine_backward(float* dy, float* dweights, const float* dout, const float* y, const float* weights,
                          const int32_t* slots, int n, int k, int D);

// ---- fp8 quantisation -------------------------------------------------------
// Values sharing one scale s (a block: Fp8Granularity) are stored dequantised,
// x -> round_fp8(x / s) * s: x / s one correctly rounded fp32 division,
// round_fp8 dtype.h's fp8_round (round to nearest even, saturating at
// +-fp8_max(fmt), as the serving quantisers clamp before converting), the
// product one fp32 multiply. s comes from the block's largest magnitude amax
// (exact, so any order; a NaN never wins):
//  - pow2: the smallest power of two >= amax / fp8_max(fmt) (that quotient
//    in fp32); dividing and multiplying back are then exact, so a matmul over
//    the dequantised values with fp32 accumulation is bit for bit the fp8 GEMM
//    that accumulates q_a * q_w and multiplies by s_a * s_w at the end;
//  - fp32: max(amax / fp8_max(fmt), floor), fp32 operations; q * s then
//    rounds, as a kernel that dequantises its operands before the GEMM does.
// Either is 1 where it would be 0 (an all-zero block without a floor) or amax
// is not finite. The floor is vLLM's, for fp32 scales of activations only
// (fp8_activation_floor):
//  - channel: 1 / (fp8_max * 512), the min_scaling_factor of vLLM's
//    dynamic_per_token_scaled_fp8_quant (csrc/quantization/fp8/common.cu),
//    so a near-silent token is not scaled up past what fp8 can hold;
//  - block: 1e-10 / fp8_max, the eps of vLLM's per_token_group_quant_8bit
//    (csrc/quantization/fp8/per_token_group_quant.cu: max(amax, 1e-10) /
//    fp8_max, the same fp32 quotient, correctly rounded division being
//    monotonic);
//  - tensor (dynamic_scaled_fp8_quant) and every weight (offline scales): none.
// vLLM's per-token kernel divides by s as here ("to match FBGemm"); its
// per-tensor kernel multiplies by 1 / s instead, which this does not model.
float fp8_scale(float amax, Dtype fmt, Fp8Scale kind, float floor = 0.0f);
// The floor above of a dynamic activation quantiser (0 for pow2 scales).
float fp8_activation_floor(Dtype fmt, Fp8Scale kind, Fp8Granularity g);
// How many scales a quantiser writes: activations [M,K] 1 / M / M * ceil(K/128);
// a weight [K,N] 1 / N / ceil(K/128) * ceil(N/128) (tensor / channel / block).
int64_t fp8_activation_scale_count(int M, int K, Fp8Granularity g);
int64_t fp8_weight_scale_count(int K, int N, Fp8Granularity g);
// out[M,K] = inp quantised dynamically (out may be inp), each block's scale
// into scales (when non-null): tensor: one over all M*K values (scales[0]);
// channel: one per row (per token, scales[m]); block: one per 1x128 slice of
// a row, the last one shorter where K % 128 != 0 (scales[m * ceil(K/128) + k / 128]).
void quantize_activations(float* out, float* scales, const float* inp, int M, int K, Dtype fmt, Fp8Scale kind,
                          Fp8Granularity g);
// w[K,N] (a linear weight [in, out]) quantised in place: tensor: one scale
// (scales[0]); channel: one per output column n (scales[n]); block: one per
// 128x128 block, shorter at the last rows and columns
// (scales[(k / 128) * ceil(N/128) + n / 128]).
void quantize_weight(float* w, float* scales, int K, int N, Dtype fmt, Fp8Scale kind, Fp8Granularity g);
// The per-row (channel) activation quantiser with the fp8 values kept as one
// byte each, as an fp8 KV cache stores them: codes[M,K] the fp8 bits of
// round_fp8(inp / s_m), scales[M] = s_m; out (when non-null; may be inp)
// their values, code * s_m: the bits quantize_activations(out, scales, inp,
// M, K, fmt, kind, Fp8Granularity::channel) gives. One thread.
void quantize_rows_fp8(uint8_t* codes, float* scales, float* out, const float* inp, int M, int K, Dtype fmt,
                       Fp8Scale kind);
// out[k] = the fp8 value of codes[k] times scale (one fp32 multiply), k < K.
void dequantize_fp8(float* out, const uint8_t* codes, float scale, int K, Dtype fmt);
// An fp8 KV cache of codes and scales in the [slot][Tmax][Hkv*hd] layout of
// attention_decode, a scale per (position, KV head) at the codes' index / hd.
// store_kv_fp8: rows x[M, Hkv*hd] quantised per KV head (quantize_rows_fp8
// with M*Hkv rows of hd), row r's codes to codes + off[r] and its scales to
// scales + off[r] / hd; x keeps their values (the bits of quantize_activations
// per row of hd, as a float cache stores them).
void store_kv_fp8(uint8_t* codes, float* scales, const int64_t* off, float* x, int M, int Hkv, int hd, Dtype fmt,
                  Fp8Scale kind);
// load_kv_fp8: the rows a decode step's attention reads, dequantised:
// out[(b * span + t) * Hkv*hd ..] = slot[b]'s position t for t < len[b] <=
// span (the rest of out untouched), b < Bq; attention_decode over out with
// slots 0..Bq-1 and cache_stride span * Hkv*hd then reads store_kv_fp8's values.
void load_kv_fp8(float* out, const uint8_t* codes, const float* scales, const int32_t* slot, const int32_t* len,
                 int64_t cache_stride, int span, int Bq, int Hkv, int hd, Dtype fmt);

// ---- elementwise / reductions ---------------------------------------------
// y[n] = round(y + x) (residual add).
void add_inplace(float* y, const float* x, int64_t n, Dtype dtype);

// ---- row copies --------------------------------------------------------------
// dst[dst_off[r] + c] = src[src_off[r] + c] for r < M, c < C (offsets in
// floats); a null offset array means r * C. The gathers and scatters between
// kernels (an MoE layer's expert inputs, rows into a KV cache) as one op: on a
// device a loop of copies would be one transfer per row. Rows must not overlap.
void copy_rows(float* dst, const int64_t* dst_off, const float* src, const int64_t* src_off, int M, int C);

// ---- optimizer -------------------------------------------------------------
// One AdamW step (decoupled weight decay, bias correction) over n parameters.
// Per element, in double precision and in exactly this order:
//   g = grads * grad_scale; m' = beta1*m + (1-beta1)*g; v' = beta2*v + ((1-beta2)*g)*g;
//   p -= (lr*weight_decay)*p; p -= (lr*(m'/bias_correction1)) / (sqrt(v'/bias_correction2) + eps);
// m, v and p are stored back as float. No reduction: any split across threads
// or SIMD lanes gives the same bits. The caller computes grad_scale (clipping)
// and the bias corrections 1 - beta^step.
struct AdamWStep {
    double grad_scale = 1.0, beta1 = 0.9, beta2 = 0.99, eps = 1e-8, weight_decay = 0.0, lr = 1e-3;
    double bias_correction1 = 1.0, bias_correction2 = 1.0;
};
void adamw_update(float* params, float* m, float* v, const float* grads, int64_t n, const AdamWStep& s);

// Sum of x[i]^2 over n floats, in double, on the calling thread: eight
// chains, element i in chain i % 8 (c += (double)x*x, each product exact),
// then ((c0 + c1) + (c2 + c3)) + ((c4 + c5) + (c6 + c7)). The gradient
// norm's blocks: the order, not the ISA, fixes the bits.
double sum_squares(const float* x, int64_t n);

}  // namespace mlk
