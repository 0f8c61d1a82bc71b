#include "core/model/buffers.h"

#include <cstdint>
#include <new>
#include <utility>

#include <sys/mman.h>
#include <unistd.h>

#include "kernels/kernels.h"

namespace mlk {

void for_parts(size_t n, size_t min_part, const std::function<void(size_t, size_t)>& fn) {
    const int parts = (int)std::min<size_t>(n / std::max<size_t>(min_part, 1), 4 * (size_t)std::max(num_threads(), 1));
    if (parts < 2) {
        if (n > 0) fn(0, n);
        return;
    }
    parallel_tasks(parts, nullptr, [&](int i) { fn(n * i / parts, n * (i + 1) / parts); });
}

void zero_floats(float* p, size_t n) {
    for_parts(n, kFloatsPerPart, [&](size_t b, size_t e) { std::fill(p + b, p + e, 0.0f); });
}

void copy_floats(float* dst, const float* src, size_t n) {
    for_parts(n, kFloatsPerPart, [&](size_t b, size_t e) { std::copy(src + b, src + e, dst + b); });
}

PagedFloats::PagedFloats(size_t n) : n_(n) {
    if (n == 0) return;
    // Anonymous private pages read as zero until written.
    void* p = mmap(nullptr, n * sizeof(float), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    p_ = static_cast<float*>(p);
}

PagedFloats::~PagedFloats() {
    if (p_) munmap(p_, n_ * sizeof(float));
}

PagedFloats::PagedFloats(PagedFloats&& o) noexcept : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)) {}

PagedFloats& PagedFloats::operator=(PagedFloats&& o) noexcept {
    if (this != &o) {
        PagedFloats gone(std::move(*this));
        p_ = std::exchange(o.p_, nullptr);
        n_ = std::exchange(o.n_, 0);
    }
    return *this;
}

void prefault_for_write(float* p, size_t n) {
    if (n == 0) return;
    static const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t begin = (uintptr_t)p & ~(page - 1);
    const uintptr_t end = ((uintptr_t)(p + n) + page - 1) & ~(page - 1);
#ifndef MADV_POPULATE_WRITE
    constexpr int MADV_POPULATE_WRITE = 23;  // Linux 5.14
#endif
    // The pages holding p[0] and p[n-1] belong to p's mapping, so rounding
    // outwards stays inside it; populating touches no value.
    if (madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE) == 0) return;
    // Older kernels: one atomic add of zero per page is a write access, the
    // single fault that maps a fresh page writable.
    for (uintptr_t a = std::max(begin, (uintptr_t)p); a < (uintptr_t)(p + n); a = (a & ~(page - 1)) + page)
        __atomic_fetch_add(reinterpret_cast<uint32_t*>(a & ~uintptr_t{3}), 0u, __ATOMIC_RELAXED);
}

GradBuffer::GradBuffer(size_t n) : ActBuffer(n) { zero_floats(data(), n); }

}  // namespace mlk
