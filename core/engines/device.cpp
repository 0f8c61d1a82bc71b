#include "core/engines/device.h"

#include <cstring>
#include <new>
#include <stdexcept>

namespace mlk {
std::string HostDeviceOps::name() const { return "host (CPU kernels)"; }
void* HostDeviceOps::allocate(size_t bytes) const {
    return bytes ? ::operator new (bytes, std::align_val_t{64}) : nullptr;
}
void HostDeviceOps::release(void* p) const {
    if (p) ::operator delete (p, std::align_val_t{64});
}
void HostDeviceOps::to_device(void* dst, const void* src, size_t bytes) const { std::memcpy(dst, src, bytes); }
void HostDeviceOps::to_host(void* dst, const void* src, size_t bytes) const { std::memcpy(dst, src, bytes); }

void HostDeviceOps::fill_zero(float* x, size_t n) const { std::memset(x, 0, n * sizeof(float)); }
void HostDeviceOps::matmul_forward(const Exec& ex, float* out, const float* inp, const float* w, int M, int K,
                                   int N) const {
    mlk::matmul_forward(ex, out, inp, w, nullptr, M, K, N);
}
void HostDeviceOps::matmul_backward(float* dinp, float* dw, const float* dout, const float* inp, const float* w, int M,
                                    int K, int N, GradStore dinp_store) const {
    mlk::matmul_backward(dinp, dw, nullptr, dout, inp, w, M, K, N, dinp_store);
}
void HostDeviceOps::rmsnorm_forward(const Exec& ex, float* out, float* rstd, const float* inp, const float* weight,
                                    float eps, int M, int C) const {
    mlk::rmsnorm_forward(ex, out, rstd, inp, weight, eps, M, C);
}
void HostDeviceOps::rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp,
                                     const float* weight, const float* rstd, int M, int C, GradStore dinp_store) const {
    mlk::rmsnorm_backward(dinp, dweight, dout, inp, weight, rstd, M, C, dinp_store);
}
void HostDeviceOps::rope_forward(float* x, const int32_t* pos, int M, int H, int D, float theta, Dtype dtype,
                                 Dtype point, Dtype cache) const {
    mlk::rope_forward(x, pos, M, H, D, theta, dtype, point, cache);
}
void HostDeviceOps::rope_backward(float* dx, const int32_t* pos, int M, int H, int D, float theta) const {
    mlk::rope_backward(dx, pos, M, H, D, theta);
}
void HostDeviceOps::attention_forward(const Exec& ex, float* out, float* att, const float* q, const float* k,
                                      const float* v, int B, int T, int H, int Hkv, int D) const {
    mlk::attention_forward(ex, out, att, q, k, v, B, T, H, Hkv, D);
}
void HostDeviceOps::attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* att,
                                       const float* q, const float* k, const float* v, int B, int T, int H, int Hkv,
                                       int D, GradStore store) const {
    mlk::attention_backward(dq, dk, dv, dout, att, q, k, v, B, T, H, Hkv, D, store);
}
void HostDeviceOps::attention_decode(const Exec& ex, float* out, const float* q, const float* kcache,
                                     const float* vcache, const int32_t* slot, const int32_t* len, int64_t cache_stride,
                                     int Bq, int H, int Hkv, int D) const {
    mlk::attention_decode(ex, out, q, kcache, vcache, slot, len, cache_stride, Bq, H, Hkv, D);
}
void HostDeviceOps::logsoftmax_forward(const Exec& ex, float* lp, const float* logits, float inv_temp, int M,
                                       int V) const {
    mlk::logsoftmax_forward(ex, lp, logits, inv_temp, M, V);
}
void HostDeviceOps::logsoftmax_backward(float* dlogits, const float* dlp, const float* lp, float inv_temp, int M,
                                        int V) const {
    mlk::logsoftmax_backward(dlogits, dlp, lp, inv_temp, M, V);
}
void HostDeviceOps::entropy_forward(const Exec& ex, float* ent, const float* lp, int M, int V) const {
    mlk::entropy_forward(ex, ent, lp, M, V);
}
void HostDeviceOps::swiglu_forward(const Exec& ex, float* out, const float* gate, const float* up, int64_t n) const {
    mlk::swiglu_forward(ex, out, gate, up, n);
}
void HostDeviceOps::swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate, const float* up,
                                    int64_t n, GradStore store) const {
    mlk::swiglu_backward(dgate, dup, dout, gate, up, n, store);
}
void HostDeviceOps::embedding_forward(float* out, const int32_t* tok, const float* table, int M, int C,
                                      Dtype dtype) const {
    mlk::embedding_forward(out, tok, table, M, C, dtype);
}
void HostDeviceOps::embedding_backward(float* dtable, const float* dout, const int32_t* tok, int M, int C) const {
    mlk::embedding_backward(dtable, dout, tok, M, C);
}
void HostDeviceOps::router_topk_forward(const Exec& ex, int32_t* ids, float* weights, const float* logits, int M, int E,
                                        int k) const {
    mlk::router_topk_forward(ex, ids, weights, logits, M, E, k);
}
void HostDeviceOps::router_replay_forward(const Exec& ex, float* weights, const float* logits, const int32_t* ids,
                                          int M, int E, int k) const {
    mlk::router_replay_forward(ex, weights, logits, ids, M, E, k);
}
void HostDeviceOps::router_backward(float* dlogits, const float* dweights, const float* weights, const int32_t* ids,
                                    int M, int E, int k) const {
    mlk::router_backward(dlogits, dweights, weights, ids, M, E, k);
}
void HostDeviceOps::moe_combine_forward(const Exec& ex, float* out, const float* const* slot_rows, const float* weights,
                                        int M, int k, int D) const {
    mlk::moe_combine_forward(ex, out, slot_rows, weights, M, k, D);
}
void HostDeviceOps::moe_combine_backward(float* dy, float* dweights, const float* dout, const float* y,
                                         const float* weights, const int32_t* slots, int n, int k, int D) const {
    mlk::moe_combine_backward(dy, dweights, dout, y, weights, slots, n, k, D);
}
void HostDeviceOps::round_buffer(float* x, size_t n, Dtype d) const { mlk::round_buffer(x, n, d); }
void HostDeviceOps::add_inplace(float* y, const float* x, int64_t n, Dtype dtype) const {
    mlk::add_inplace(y, x, n, dtype);
}
void HostDeviceOps::copy_rows(float* dst, const int64_t* dst_off, const float* src, const int64_t* src_off, int M,
                              int C) const {
    mlk::copy_rows(dst, dst_off, src, src_off, M, C);
}
void HostDeviceOps::store_kv_fp8(uint8_t* codes, float* scales, const int64_t* off, float* x, int M, int Hkv, int hd,
                                 Dtype fmt, Fp8Scale kind) const {
    mlk::store_kv_fp8(codes, scales, off, x, M, Hkv, hd, fmt, kind);
}
void HostDeviceOps::load_kv_fp8(float* out, const uint8_t* codes, const float* scales, const int32_t* slot,
                                const int32_t* len, int64_t cache_stride, int span, int Bq, int Hkv, int hd,
                                Dtype fmt) const {
    mlk::load_kv_fp8(out, codes, scales, slot, len, cache_stride, span, Bq, Hkv, hd, fmt);
}

const DeviceOps& host_device_ops() {
    static const HostDeviceOps device;
    return device;
}

const DeviceOps* device_ops_for(Device device, const std::string& field) {
    return device == Device::cpu ? nullptr : &cuda_device_ops(field);
}

void check_devices(const Config& c) {
    device_ops_for(c.rollout.device, "rollout.device");
    device_ops_for(c.train.device, "train.device");
}

std::string device_problem(const Config& c) {
    try {
        check_devices(c);
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    return "";
}

#ifndef MLK_HAVE_CUDA
bool cuda_built() { return false; }
int cuda_devices() { return 0; }
const DeviceOps& cuda_device_ops(const std::string& field) {
    throw std::runtime_error(field +
                             " = cuda: this build has no CUDA backend (CMake found no CUDA toolkit when it was "
                             "configured); allowed here: cpu");
}
#endif

}  // namespace mlk
