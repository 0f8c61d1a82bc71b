// The CUDA backend's device API (device.h) and its per-thread state
// (internal.h). Compiled by the host compiler against the CUDA runtime.
#include "kernels/cuda/device.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/internal.h"

namespace mlk::cuda {
namespace detail {

void check(cudaError_t e, const char* what) {
    if (e == cudaSuccess) return;
    (void)cudaGetLastError();  // clear a sticky launch error so later calls report their own
    throw std::runtime_error(std::string("CUDA ") + what + ": " + cudaGetErrorString(e));
}

void check_cublas(cublasStatus_t s, const char* what) {
    if (s == CUBLAS_STATUS_SUCCESS) return;
    throw std::runtime_error(std::string("cuBLAS ") + what + ": status " + std::to_string((int)s));
}

bool profiling() {
    static const bool on = [] {
        const char* v = std::getenv("MLK_CUDA_PROFILE");
        return v && *v && std::string(v) != "0";
    }();
    return on;
}

namespace {
// The totals of MLK_CUDA_PROFILE, printed when the process exits (no CUDA
// call is made then: only the table is read).
struct Profile {
    struct Entry {
        int64_t calls = 0;
        double seconds = 0;
    };
    std::mutex mu;
    std::map<std::string, Entry> by_name;
    ~Profile() {
        if (by_name.empty()) return;
        std::vector<std::pair<std::string, Entry>> rows(by_name.begin(), by_name.end());
        std::sort(rows.begin(), rows.end(),
                  [](const auto& a, const auto& b) { return a.second.seconds > b.second.seconds; });
        double total = 0;
        for (const auto& r : rows) total += r.second.seconds;
        std::fprintf(stderr, "MLK_CUDA_PROFILE: %.3f s in all, by name (calls, ms, share, us per call)\n", total);
        for (const auto& [name, e] : rows)
            std::fprintf(stderr, "  %-44s %9lld %10.2f %5.1f%% %9.1f\n", name.c_str(), (long long)e.calls,
                         e.seconds * 1e3, 100 * e.seconds / total, 1e6 * e.seconds / (double)e.calls);
    }
};
Profile& profile() {
    static Profile p;
    return p;
}

using ProfileClock = std::chrono::steady_clock;
// The end of the calling thread's last marked span.
ProfileClock::time_point& profile_last() {
    thread_local ProfileClock::time_point last = ProfileClock::now();
    return last;
}
void profile_add(const char* what, double seconds) {
    Profile& p = profile();
    std::lock_guard<std::mutex> lk(p.mu);
    auto& e = p.by_name[what];
    e.calls += 1;
    e.seconds += seconds;
}
}  // namespace

// The launch (or call, or copy) returned to the host just now: the host time
// since the last mark is the host's ("host, between device calls"), the wait
// for the stream is the device's.
void profile_mark(const char* what) {
    const ProfileClock::time_point entered = ProfileClock::now();
    check(cudaStreamSynchronize(stream()), what);
    const ProfileClock::time_point done = ProfileClock::now();
    profile_add(what, std::chrono::duration<double>(done - entered).count());
    profile_add("host, between device calls", std::chrono::duration<double>(entered - profile_last()).count());
    profile_last() = done;
}

// The host time since the last mark, under `what` (no device wait).
void profile_host_span(const char* what) {
    const ProfileClock::time_point now = ProfileClock::now();
    profile_add(what, std::chrono::duration<double>(now - profile_last()).count());
    profile_last() = now;
}

const char* cublas_soname() { return MLK_CUBLAS_SONAME; }

const CublasApi& cublas_api() {
    static const CublasApi api = [] {
        // The toolkit's own copy first (the one the build compiled against),
        // then the loader's search path (LD_LIBRARY_PATH, ld.so.cache).
        void* lib = dlopen(MLK_CUBLAS_DIR "/" MLK_CUBLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
        if (!lib) lib = dlopen(MLK_CUBLAS_SONAME, RTLD_NOW | RTLD_LOCAL);
        if (!lib) throw std::runtime_error(std::string("cuBLAS: cannot load " MLK_CUBLAS_SONAME ": ") + dlerror());
        const auto sym = [&](const char* name) {
            void* f = dlsym(lib, name);
            if (!f) throw std::runtime_error(std::string("cuBLAS: " MLK_CUBLAS_SONAME " has no ") + name);
            return f;
        };
        // cublas_v2.h's names are macros for these.
        CublasApi a{};
        a.create = reinterpret_cast<decltype(a.create)>(sym("cublasCreate_v2"));
        a.set_stream = reinterpret_cast<decltype(a.set_stream)>(sym("cublasSetStream_v2"));
        a.sgemm = reinterpret_cast<decltype(a.sgemm)>(sym("cublasSgemm_v2"));
        a.gemm_ex = reinterpret_cast<decltype(a.gemm_ex)>(sym("cublasGemmEx"));
        return a;
    }();
    return api;
}

namespace {

// The calling thread's state. Kept for the thread's (and the process') life
// and never destroyed: releasing CUDA objects from thread-exit or static
// destructors races the runtime's own teardown at process exit.
struct ThreadState {
    cudaStream_t stream = nullptr;
    cublasHandle_t cublas = nullptr;
    int cublas_device = -1;
    void* ws = nullptr;
    size_t ws_bytes = 0;
};
ThreadState& state() {
    thread_local ThreadState s;
    return s;
}

int current_device() {
    int d = 0;
    check(cudaGetDevice(&d), "cudaGetDevice");
    return d;
}

// Per-device attribute, read once.
int device_attribute(cudaDeviceAttr attr, const char* what) {
    static std::mutex mu;
    static std::vector<std::pair<std::pair<int, int>, int>> cache;
    const int dev = current_device();
    std::lock_guard<std::mutex> lk(mu);
    for (const auto& [key, v] : cache)
        if (key.first == dev && key.second == (int)attr) return v;
    int v = 0;
    check(cudaDeviceGetAttribute(&v, attr, dev), what);
    cache.push_back({{dev, (int)attr}, v});
    return v;
}

}  // namespace

cudaStream_t stream() { return state().stream; }

cublasHandle_t cublas() {
    ThreadState& s = state();
    const int dev = current_device();
    if (!s.cublas || s.cublas_device != dev) {
        // Opening cuBLAS and creating a handle takes about 60 ms on an H200:
        // under MLK_CUDA_PROFILE that is its own line, not the host's time
        // between calls.
        if (profiling()) profile_host_span("host, between device calls");
        // (a handle of another device is left alive: see ThreadState)
        check_cublas(cublas_api().create(&s.cublas), "cublasCreate");
        s.cublas_device = dev;
        if (profiling()) profile_host_span("cuBLAS opened, handle created (host)");
    }
    check_cublas(cublas_api().set_stream(s.cublas, s.stream), "cublasSetStream");
    return s.cublas;
}

int sm_count() { return device_attribute(cudaDevAttrMultiProcessorCount, "multiprocessor count"); }

size_t max_smem_optin() {
    return (size_t)device_attribute(cudaDevAttrMaxSharedMemoryPerBlockOptin, "shared memory per block");
}

void allow_smem(const void* kernel, size_t bytes, const char* what) {
    if (bytes <= 48 * 1024) return;
    if (bytes > max_smem_optin())
        throw std::runtime_error(std::string("CUDA ") + what + ": needs " + std::to_string(bytes) +
                                 " bytes of shared memory per block, the device has " +
                                 std::to_string(max_smem_optin()));
    check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes), what);
}

void* workspace(size_t bytes) {
    ThreadState& s = state();
    if (bytes <= s.ws_bytes) return s.ws;
    if (s.ws) {
        check(cudaStreamSynchronize(s.stream), "workspace (waiting for the stream)");
        check(cudaFree(s.ws), "workspace free");
        s.ws = nullptr;
        s.ws_bytes = 0;
    }
    const size_t n = bytes < (1u << 20) ? (1u << 20) : bytes + bytes / 4;
    check(cudaMalloc(&s.ws, n), "workspace");
    s.ws_bytes = n;
    return s.ws;
}

}  // namespace detail

using detail::check;

int device_count() {
    int n = 0;
    // No driver, no device, a driver older than the runtime: an error code, not a throw.
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n;
}

const char* device_description() {
    thread_local std::string s;
    s.clear();
    if (device_count() == 0) return s.c_str();
    cudaDeviceProp p{};
    if (cudaGetDeviceProperties(&p, detail::current_device()) != cudaSuccess) return s.c_str();
    s = std::string(p.name) + " (sm_" + std::to_string(p.major) + std::to_string(p.minor) + ", " +
        std::to_string(p.multiProcessorCount) + " SMs)";
    return s.c_str();
}

Stream create_stream() {
    cudaStream_t s = nullptr;
    check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
    return s;
}
void destroy_stream(Stream s) {
    if (s) check(cudaStreamDestroy(static_cast<cudaStream_t>(s)), "cudaStreamDestroy");
}
void set_stream(Stream s) { detail::state().stream = static_cast<cudaStream_t>(s); }
Stream current_stream() { return detail::state().stream; }
void synchronize() { check(cudaStreamSynchronize(detail::stream()), "synchronize"); }

void* device_malloc(size_t bytes) {
    if (bytes == 0) return nullptr;
    void* p = nullptr;
    check(cudaMalloc(&p, bytes), "cudaMalloc");
    return p;
}
void device_free(void* p) {
    if (p) (void)cudaFree(p);  // (called from destructors: never throws)
}
void copy_to_device(void* dst, const void* src, size_t bytes) {
    if (bytes == 0) return;
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice, detail::stream()), "copy to device");
    check(cudaStreamSynchronize(detail::stream()), "copy to device");  // the host buffer may go away
    if (detail::profiling()) detail::profile_mark("copy to device");
}
void copy_to_host(void* dst, const void* src, size_t bytes) {
    if (bytes == 0) return;
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, detail::stream()), "copy to host");
    check(cudaStreamSynchronize(detail::stream()), "copy to host");
    if (detail::profiling()) detail::profile_mark("copy to host");
}
void copy_device_to_device(void* dst, const void* src, size_t bytes) {
    if (bytes == 0) return;
    check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, detail::stream()), "copy on device");
    if (detail::profiling()) detail::profile_mark("copy on device");
}
void memset_device(void* dst, int byte, size_t bytes) {
    if (bytes == 0) return;
    check(cudaMemsetAsync(dst, byte, bytes, detail::stream()), "memset");
    if (detail::profiling()) detail::profile_mark("memset");
}

}  // namespace mlk::cuda
