// The CUDA backend behind DeviceOps (built with MLK_HAVE_CUDA only): each
// call forwards to kernels/cuda/ops.h on the calling thread's stream.
#include <stdexcept>

#include "core/engines/device.h"
#include "kernels/cuda/ops.h"

namespace mlk {
namespace {

class CudaDevice final : public DeviceOps {
public:
    std::string name() const override { return std::string("CUDA: ") + cuda::device_description(); }
    bool counts_flops() const override { return false; }
    void* allocate(size_t bytes) const override { return cuda::device_malloc(bytes); }
    void release(void* p) const override { cuda::device_free(p); }
    void to_device(void* dst, const void* src, size_t bytes) const override { cuda::copy_to_device(dst, src, bytes); }
    void to_host(void* dst, const void* src, size_t bytes) const override { cuda::copy_to_host(dst, src, bytes); }

    void fill_zero(float* x, size_t n) const override { cuda::memset_device(x, 0, n * sizeof(float)); }
    void matmul_forward(const Exec& ex, float* out, const float* inp, const float* w, int M, int K,
                        int N) const override {
        cuda::matmul_forward(ex, out, inp, w, nullptr, M, K, N);
    }
    void matmul_backward(float* dinp, float* dw, const float* dout, const float* inp, const float* w, int M, int K,
                         int N, GradStore dinp_store) const override {
        cuda::matmul_backward(dinp, dw, nullptr, dout, inp, w, M, K, N, dinp_store);
    }
    void rmsnorm_forward(const Exec& ex, float* out, float* rstd, const float* inp, const float* weight, float eps,
                         int M, int C) const override {
        cuda::rmsnorm_forward(ex, out, rstd, inp, weight, eps, M, C);
    }
    void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                          const float* rstd, int M, int C, GradStore dinp_store) const override {
        cuda::rmsnorm_backward(dinp, dweight, dout, inp, weight, rstd, M, C, dinp_store);
    }
    void rope_forward(float* x, const int32_t* pos, int M, int H, int D, float theta, Dtype dtype,
                      Dtype point = Dtype::f32, Dtype cache = Dtype::f32) const override {
        cuda::rope_forward(x, pos, M, H, D, theta, dtype, point, cache);
    }
    void rope_backward(float* dx, const int32_t* pos, int M, int H, int D, float theta) const override {
        cuda::rope_backward(dx, pos, M, H, D, theta);
    }
    void attention_forward(const Exec& ex, float* out, float* att, const float* q, const float* k, const float* v,
                           int B, int T, int H, int Hkv, int D) const override {
        cuda::attention_forward(ex, out, att, q, k, v, B, T, H, Hkv, D);
    }
    void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* att, const float* q,
                            const float* k, const float* v, int B, int T, int H, int Hkv, int D,
                            GradStore store) const override {
        cuda::attention_backward(dq, dk, dv, dout, att, q, k, v, B, T, H, Hkv, D, store);
    }
    void attention_decode(const Exec& ex, float* out, const float* q, const float* kcache, const float* vcache,
                          const int32_t* slot, const int32_t* len, int64_t cache_stride, int Bq, int H, int Hkv,
                          int D) const override {
        cuda::attention_decode(ex, out, q, kcache, vcache, slot, len, cache_stride, Bq, H, Hkv, D);
    }
    void logsoftmax_forward(const Exec& ex, float* lp, const float* logits, float inv_temp, int M,
                            int V) const override {
        cuda::logsoftmax_forward(ex, lp, logits, inv_temp, M, V);
    }
    void logsoftmax_backward(float* dlogits, const float* dlp, const float* lp, float inv_temp, int M,
                             int V) const override {
        cuda::logsoftmax_backward(dlogits, dlp, lp, inv_temp, M, V);
    }
    void entropy_forward(const Exec& ex, float* ent, const float* lp, int M, int V) const override {
        cuda::entropy_forward(ex, ent, lp, M, V);
    }
    void swiglu_forward(const Exec& ex, float* out, const float* gate, const float* up, int64_t n) const override {
        cuda::swiglu_forward(ex, out, gate, up, n);
    }
    void swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate, const float* up, int64_t n,
                         GradStore store) const override {
        cuda::swiglu_backward(dgate, dup, dout, gate, up, n, store);
    }
    void embedding_forward(float* out, const int32_t* tok, const float* table, int M, int C,
                           Dtype dtype) const override {
        cuda::embedding_forward(out, tok, table, M, C, dtype);
    }
    void embedding_backward(float* dtable, const float* dout, const int32_t* tok, int M, int C) const override {
        cuda::embedding_backward(dtable, dout, tok, M, C);
    }
    void router_topk_forward(const Exec& ex, int32_t* ids, float* weights, const float* logits, int M, int E,
                             int k) const override {
        cuda::router_topk_forward(ex, ids, weights, logits, M, E, k);
    }
    void router_replay_forward(const Exec& ex, float* weights, const float* logits, const int32_t* ids, int M, int E,
                               int k) const override {
        cuda::router_replay_forward(ex, weights, logits, ids, M, E, k);
    }
    void router_backward(float* dlogits, const float* dweights, const float* weights, const int32_t* ids, int M, int E,
                         int k) const override {
        cuda::router_backward(dlogits, dweights, weights, ids, M, E, k);
    }
    void moe_combine_forward(const Exec& ex, float* out, const float* const* slot_rows, const float* weights, int M,
                             int k, int D) const override {
        cuda::moe_combine_forward(ex, out, slot_rows, weights, M, k, D);
    }
    void moe_combine_backward(float* dy, float* dweights, const float* dout, const float* y, const float* weights,
                              const int32_t* slots, int n, int k, int D) const override {
        cuda::moe_combine_backward(dy, dweights, dout, y, weights, slots, n, k, D);
    }
    void round_buffer(float* x, size_t n, Dtype d) const override { cuda::round_buffer(x, n, d); }
    void add_inplace(float* y, const float* x, int64_t n, Dtype dtype) const override {
        cuda::add_inplace(y, x, n, dtype);
    }
    void copy_rows(float* dst, const int64_t* dst_off, const float* src, const int64_t* src_off, int M,
                   int C) const override {
        cuda::copy_rows(dst, dst_off, src, src_off, M, C);
    }
    void store_kv_fp8(uint8_t* codes, float* scales, const int64_t* off, float* x, int M, int Hkv, int hd, Dtype fmt,
                      Fp8Scale kind) const override {
        cuda::store_kv_fp8(codes, scales, off, x, M, Hkv, hd, fmt, kind);
    }
    void load_kv_fp8(float* out, const uint8_t* codes, const float* scales, const int32_t* slot, const int32_t* len,
                     int64_t cache_stride, int span, int Bq, int Hkv, int hd, Dtype fmt) const override {
        cuda::load_kv_fp8(out, codes, scales, slot, len, cache_stride, span, Bq, Hkv, hd, fmt);
    }
};

}  // namespace

bool cuda_built() { return true; }
int cuda_devices() { return cuda::device_count(); }

const DeviceOps& cuda_device_ops(const std::string& field) {
    if (cuda::device_count() == 0)
        throw std::runtime_error(field +
                                 " = cuda: no CUDA device is visible (no NVIDIA driver, no GPU, or "
                                 "CUDA_VISIBLE_DEVICES hides it); allowed here: cpu");
    static const CudaDevice device;
    return device;
}

}  // namespace mlk
