// Where an engine computes when it is not the CPU engines' own code: a device
// reached through DeviceOps, the op set of kernels/kernels.h over device
// pointers plus the copies between host and device. The CUDA backend is one
// (kernels/cuda/ops.h); the host device is the other: the CPU kernels over
// host memory behind the same interface, so the device code path (the model
// on a device, its uploads and downloads) runs and is tested on any machine,
// bit for bit against the CPU engines, without a GPU.
//
// Every pointer an op takes is device memory; sizes and Exec are host values.
// Ops may run asynchronously; to_host waits for the ops before it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/config/settings.h"
#include "kernels/kernels.h"

namespace mlk {

class DeviceOps {
public:
    virtual ~DeviceOps() = default;
    // "CUDA: NVIDIA H100 (sm_90, 132 SMs)", "host (CPU kernels)".
    virtual std::string name() const = 0;
    // Whether the ops count their FLOPs into kernel_flop_count themselves
    // (the CPU kernels do); otherwise the device path counts them.
    virtual bool counts_flops() const = 0;

    virtual void* allocate(size_t bytes) const = 0;  // throws on failure; 0 bytes may give nullptr
    virtual void release(void* p) const = 0;         // nullptr is a no-op
    virtual void to_device(void* dst, const void* src, size_t bytes) const = 0;
    virtual void to_host(void* dst, const void* src, size_t bytes) const = 0;

    // The op set of kernels.h (matmul without a bias; round_buffer from
    // dtype.h), in its argument order.
    virtual void fill_zero(float* x, size_t n) const = 0;
    virtual void matmul_forward(const Exec& ex, float* out, const float* inp, const float* w, int M, int K,
                                int N) const = 0;
    virtual void matmul_backward(float* dinp, float* dw, const float* dout, const float* inp, const float* w, int M,
                                 int K, int N, GradStore dinp_store) const = 0;
    virtual void rmsnorm_forward(const Exec& ex, float* out, float* rstd, const float* inp, const float* weight,
                                 float eps, int M, int C) const = 0;
    virtual void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                                  const float* rstd, int M, int C, GradStore dinp_store) const = 0;
    // point, cache: Exec::rope, Exec::rope_cache (kernels.h rope_forward).
    virtual void rope_forward(float* x, const int32_t* pos, int M, int H, int D, float theta, Dtype dtype,
                              Dtype point = Dtype::f32, Dtype cache = Dtype::f32) const = 0;
    virtual void rope_backward(float* dx, const int32_t* pos, int M, int H, int D, float theta) const = 0;
    virtual void attention_forward(const Exec& ex, float* out, float* att, const float* q, const float* k,
                                   const float* v, int B, int T, int H, int Hkv, int D) const = 0;
    virtual void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* att,
                                    const float* q, const float* k, const float* v, int B, int T, int H, int Hkv, int D,
                                    GradStore store) const = 0;
    virtual void attention_decode(const Exec& ex, float* out, const float* q, const float* kcache, const float* vcache,
                                  const int32_t* slot, const int32_t* len, int64_t cache_stride, int Bq, int H, int Hkv,
                                  int D) const = 0;
    virtual void logsoftmax_forward(const Exec& ex, float* lp, const float* logits, float inv_temp, int M,
                                    int V) const = 0;
    virtual void logsoftmax_backward(float* dlogits, const float* dlp, const float* lp, float inv_temp, int M,
                                     int V) const = 0;
    virtual void entropy_forward(const Exec& ex, float* ent, const float* lp, int M, int V) const = 0;
    virtual void swiglu_forward(const Exec& ex, float* out, const float* gate, const float* up, int64_t n) const = 0;
    virtual void swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate, const float* up,
                                 int64_t n, GradStore store) const = 0;
    virtual void embedding_forward(float* out, const int32_t* tok, const float* table, int M, int C,
                                   Dtype dtype) const = 0;
    virtual void embedding_backward(float* dtable, const float* dout, const int32_t* tok, int M, int C) const = 0;
    virtual void router_topk_forward(const Exec& ex, int32_t* ids, float* weights, const float* logits, int M, int E,
                                     int k) const = 0;
    virtual void router_replay_forward(const Exec& ex, float* weights, const float* logits, const int32_t* ids, int M,
                                       int E, int k) const = 0;
    virtual void router_backward(float* dlogits, const float* dweights, const float* weights, const int32_t* ids, int M,
                                 int E, int k) const = 0;
    virtual void moe_combine_forward(const Exec& ex, float* out, const float* const* slot_rows, const float* weights,
                                     int M, int k, int D) const = 0;
    virtual void moe_combine_backward(float* dy, float* dweights, const float* dout, const float* y,
                                      const float* weights, const int32_t* slots, int n, int k, int D) const = 0;
    virtual void round_buffer(float* x, size_t n, Dtype d) const = 0;
    virtual void add_inplace(float* y, const float* x, int64_t n, Dtype dtype) const = 0;
    virtual void copy_rows(float* dst, const int64_t* dst_off, const float* src, const int64_t* src_off, int M,
                           int C) const = 0;
    // An fp8 KV cache as bytes and scales (kernels.h: store_kv_fp8, load_kv_fp8).
    virtual void store_kv_fp8(uint8_t* codes, float* scales, const int64_t* off, float* x, int M, int Hkv, int hd,
                              Dtype fmt, Fp8Scale kind) const = 0;
    virtual void load_kv_fp8(float* out, const uint8_t* codes, const float* scales, const int32_t* slot,
                             const int32_t* len, int64_t cache_stride, int span, int Bq, int Hkv, int hd,
                             Dtype fmt) const = 0;
};

// The CPU kernels over host memory: the device path without a device.
// kernels_count_flops = false (tests): the device path counts the FLOPs
// itself, as it does for a GPU, on top of the CPU kernels' own count. Not
// final: a test may replace one of its ops with a reference.
class HostDeviceOps : public DeviceOps {
public:
    explicit HostDeviceOps(bool kernels_count_flops = true) : kernels_count_(kernels_count_flops) {}
    std::string name() const override;
    bool counts_flops() const override { return kernels_count_; }
    void* allocate(size_t bytes) const override;
    void release(void* p) const override;
    void to_device(void* dst, const void* src, size_t bytes) const override;
    void to_host(void* dst, const void* src, size_t bytes) const override;
    void fill_zero(float* x, size_t n) const override;
    void matmul_forward(const Exec& ex, float* out, const float* inp, const float* w, int M, int K,
                        int N) const override;
    void matmul_backward(float* dinp, float* dw, const float* dout, const float* inp, const float* w, int M, int K,
                         int N, GradStore dinp_store) const override;
    void rmsnorm_forward(const Exec& ex, float* out, float* rstd, const float* inp, const float* weight, float eps,
                         int M, int C) const override;
    void rmsnorm_backward(float* dinp, float* dweight, const float* dout, const float* inp, const float* weight,
                          const float* rstd, int M, int C, GradStore dinp_store) const override;
    void rope_forward(float* x, const int32_t* pos, int M, int H, int D, float theta, Dtype dtype,
                      Dtype point = Dtype::f32, Dtype cache = Dtype::f32) const override;
    void rope_backward(float* dx, const int32_t* pos, int M, int H, int D, float theta) const override;
    void attention_forward(const Exec& ex, float* out, float* att, const float* q, const float* k, const float* v,
                           int B, int T, int H, int Hkv, int D) const override;
    void attention_backward(float* dq, float* dk, float* dv, const float* dout, const float* att, const float* q,
                            const float* k, const float* v, int B, int T, int H, int Hkv, int D,
                            GradStore store) const override;
    void attention_decode(const Exec& ex, float* out, const float* q, const float* kcache, const float* vcache,
                          const int32_t* slot, const int32_t* len, int64_t cache_stride, int Bq, int H, int Hkv,
                          int D) const override;
    void logsoftmax_forward(const Exec& ex, float* lp, const float* logits, float inv_temp, int M,
                            int V) const override;
    void logsoftmax_backward(float* dlogits, const float* dlp, const float* lp, float inv_temp, int M,
                             int V) const override;
    void entropy_forward(const Exec& ex, float* ent, const float* lp, int M, int V) const override;
    void swiglu_forward(const Exec& ex, float* out, const float* gate, const float* up, int64_t n) const override;
    void swiglu_backward(float* dgate, float* dup, const float* dout, const float* gate, const float* up, int64_t n,
                         GradStore store) const override;
    void embedding_forward(float* out, const int32_t* tok, const float* table, int M, int C,
                           Dtype dtype) const override;
    void embedding_backward(float* dtable, const float* dout, const int32_t* tok, int M, int C) const override;
    void router_topk_forward(const Exec& ex, int32_t* ids, float* weights, const float* logits, int M, int E,
                             int k) const override;
    void router_replay_forward(const Exec& ex, float* weights, const float* logits, const int32_t* ids, int M, int E,
                               int k) const override;
    void router_backward(float* dlogits, const float* dweights, const float* weights, const int32_t* ids, int M, int E,
                         int k) const override;
    void moe_combine_forward(const Exec& ex, float* out, const float* const* slot_rows, const float* weights, int M,
                             int k, int D) const override;
    void moe_combine_backward(float* dy, float* dweights, const float* dout, const float* y, const float* weights,
                              const int32_t* slots, int n, int k, int D) const override;
    void round_buffer(float* x, size_t n, Dtype d) const override;
    void add_inplace(float* y, const float* x, int64_t n, Dtype dtype) const override;
    void copy_rows(float* dst, const int64_t* dst_off, const float* src, const int64_t* src_off, int M,
                   int C) const override;
    void store_kv_fp8(uint8_t* codes, float* scales, const int64_t* off, float* x, int M, int Hkv, int hd, Dtype fmt,
                      Fp8Scale kind) const override;
    void load_kv_fp8(float* out, const uint8_t* codes, const float* scales, const int32_t* slot, const int32_t* len,
                     int64_t cache_stride, int span, int Bq, int Hkv, int hd, Dtype fmt) const override;

private:
    bool kernels_count_;
};
const DeviceOps& host_device_ops();
// The CUDA backend on the current device. Throws std::runtime_error saying
// why there is none (a build without CUDA, no visible device); the message
// starts with `field` ("rollout.device = cuda: ...") and names what is allowed.
const DeviceOps& cuda_device_ops(const std::string& field);
// An engine's DeviceOps for a device setting: nullptr for cpu (the CPU
// engine's own code), else cuda_device_ops(field).
const DeviceOps* device_ops_for(Device device, const std::string& field);
// Throws (as cuda_device_ops) unless every engine's device setting of c can
// run here: called before a run does any work or writes anything.
void check_devices(const Config& c);
// check_devices' message, or "" when c can run here.
std::string device_problem(const Config& c);
// Whether this build has the CUDA backend, and how many devices it sees.
bool cuda_built();
int cuda_devices();

// An owning device array of T whose resize, like ActBuffer's, keeps nothing:
// every buffer is written whole by the op that fills it.
template <class T>
class DeviceArray {
public:
    explicit DeviceArray(const DeviceOps& ops) : ops_(&ops) {}
    ~DeviceArray() { ops_->release(p_); }
    DeviceArray(const DeviceArray&) = delete;
    DeviceArray& operator=(const DeviceArray&) = delete;
    DeviceArray(DeviceArray&& o) noexcept : ops_(o.ops_), p_(o.p_), n_(o.n_), cap_(o.cap_) {
        o.p_ = nullptr, o.n_ = o.cap_ = 0;
    }
    DeviceArray& operator=(DeviceArray&& o) noexcept {
        if (this != &o) {
            ops_->release(p_);
            ops_ = o.ops_, p_ = o.p_, n_ = o.n_, cap_ = o.cap_;
            o.p_ = nullptr, o.n_ = o.cap_ = 0;
        }
        return *this;
    }

    void resize(size_t n) {
        if (n > cap_) {
            ops_->release(p_);
            p_ = nullptr, cap_ = 0;
            p_ = static_cast<T*>(ops_->allocate(n * sizeof(T)));
            cap_ = n;
        }
        n_ = n;
    }
    void free() {
        ops_->release(p_);
        p_ = nullptr, n_ = cap_ = 0;
    }
    void upload(const T* host, size_t n) {
        resize(n);
        if (n) ops_->to_device(p_, host, n * sizeof(T));
    }
    void upload(const std::vector<T>& host) { upload(host.data(), host.size()); }
    void download(std::vector<T>& host) const {
        host.resize(n_);
        download(host.data());
    }
    // n_ elements into host.
    void download(T* host) const {
        if (n_) ops_->to_host(host, p_, n_ * sizeof(T));
    }
    T* data() { return p_; }
    const T* data() const { return p_; }
    size_t size() const { return n_; }

private:
    const DeviceOps* ops_;
    T* p_ = nullptr;
    size_t n_ = 0, cap_ = 0;
};

}  // namespace mlk
