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
    constexpr size_t kHuge = size_t{2} << 20;
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    mapped_ = (n * sizeof(float) + page - 1) / page * page;
    // Anonymous private pages read as zero until written. A huge page needs
    // a 2 MB aligned start: map one huge page more and unmap around it.
    const bool huge = mapped_ >= kHuge;
    const size_t slack = huge ? kHuge : 0;
    void* m = mmap(nullptr, mapped_ + slack, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw std::bad_alloc();
    char* base = static_cast<char*>(m);
    char* start = base;
    if (huge) {
        start = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(base) + kHuge - 1) & ~(uintptr_t)(kHuge - 1));
        if (start > base) munmap(base, start - base);
        if (base + mapped_ + slack > start + mapped_)
            munmap(start + mapped_, base + mapped_ + slack - (start + mapped_));
        madvise(start, mapped_, MADV_HUGEPAGE);  // a hint: without THP the pages stay 4 kB
    }
    p_ = reinterpret_cast<float*>(start);
}

PagedFloats::~PagedFloats() {
    if (p_) munmap(p_, mapped_);
}

PagedFloats::PagedFloats(PagedFloats&& o) noexcept
    : p_(std::exchange(o.p_, nullptr)), n_(std::exchange(o.n_, 0)), mapped_(std::exchange(o.mapped_, 0)) {}

PagedFloats& PagedFloats::operator=(PagedFloats&& o) noexcept {
    if (this != &o) {
        PagedFloats gone(std::move(*this));
        p_ = std::exchange(o.p_, nullptr);
        n_ = std::exchange(o.n_, 0);
        mapped_ = std::exchange(o.mapped_, 0);
    }
    return *this;
}

GradBuffer::GradBuffer(size_t n) : ActBuffer(n) { zero_floats(data(), n); }

}  // namespace mlk
