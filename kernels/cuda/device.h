// The CUDA backend's device API: device discovery, device memory, the stream
// the ops run on. A plain C++ header (no CUDA include), so host code compiled
// by the host compiler (tests, engines) can use it; link mlk_kernels_cuda.
//
// Errors (a failed allocation, a launch error) throw std::runtime_error with
// CUDA's message. device_count() never throws: without a driver or a device
// it returns 0, which is how the GPU tests decide to skip.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mlk::cuda {

// Number of usable CUDA devices; 0 without a driver, without a device, or
// when the runtime cannot initialise (never throws).
int device_count();
// "name (sm_XY, N SMs)" of the current device; "" when there is none.
const char* device_description();

// ---- streams -----------------------------------------------------------------
// Every op is enqueued on the calling thread's stream (cudaStream_t as an
// opaque pointer); nullptr, the default, is CUDA's legacy default stream.
// Ops are asynchronous: copy_to_host and synchronize() wait for them.
using Stream = void*;
Stream create_stream();
void destroy_stream(Stream s);
void set_stream(Stream s);
Stream current_stream();
// Waits until every op enqueued on the calling thread's stream has finished;
// throws if one of them failed.
void synchronize();

// ---- memory --------------------------------------------------------------------
void* device_malloc(size_t bytes);  // throws on failure; 0 bytes -> nullptr
void device_free(void* p);          // nullptr is a no-op
// Copies ordered on the calling thread's stream. copy_to_device and
// copy_to_host return once the copy is done (they wait for the ops enqueued
// before them); copy_device_to_device and memset_device are asynchronous.
void copy_to_device(void* dst, const void* src, size_t bytes);
void copy_to_host(void* dst, const void* src, size_t bytes);
void copy_device_to_device(void* dst, const void* src, size_t bytes);
void memset_device(void* dst, int byte, size_t bytes);

// An owning device array of n elements of T (trivially copyable).
template <class T>
class Buffer {
public:
    Buffer() = default;
    explicit Buffer(size_t n) : p_(static_cast<T*>(device_malloc(n * sizeof(T)))), n_(n) {}
    explicit Buffer(const std::vector<T>& host) : Buffer(host.size()) { upload(host); }
    ~Buffer() { device_free(p_); }
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    Buffer(Buffer&& o) noexcept : p_(o.p_), n_(o.n_) { o.p_ = nullptr, o.n_ = 0; }
    Buffer& operator=(Buffer&& o) noexcept {
        if (this != &o) {
            device_free(p_);
            p_ = o.p_, n_ = o.n_;
            o.p_ = nullptr, o.n_ = 0;
        }
        return *this;
    }
    T* data() { return p_; }
    const T* data() const { return p_; }
    size_t size() const { return n_; }
    void upload(const std::vector<T>& host) { copy_to_device(p_, host.data(), host.size() * sizeof(T)); }
    std::vector<T> download() const {
        std::vector<T> h(n_);
        copy_to_host(h.data(), p_, n_ * sizeof(T));
        return h;
    }

private:
    T* p_ = nullptr;
    size_t n_ = 0;
};

}  // namespace mlk::cuda
