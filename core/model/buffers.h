// Float buffers between kernels: activations that are written whole (no
// zero-fill), gradient scratch that starts at zero, and the memory-bound
// fills and copies between kernels, split across the pool's threads.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace mlk {

// An allocator whose resize() leaves new elements unset. The activation
// buffers below are resized and then written whole by the kernel that fills
// them, so zeroing them first would be pure cost: 5% of an MoE step's samples
// (perf: memset under moe_forward, plus the page faults it takes first).
template <class T>
struct UnsetAllocator : std::allocator<T> {
    using std::allocator<T>::allocator;
    template <class U>
    struct rebind {
        using other = UnsetAllocator<U>;
    };
    template <class U>
    void construct(U* p) noexcept {
        ::new (static_cast<void*>(p)) U;
    }
    template <class U, class... Args>
    void construct(U* p, Args&&... args) {
        ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
    }
};
// Activations that a kernel overwrites in full after every resize. A resize
// past the capacity therefore drops the old contents instead of copying them
// across (std::vector copies element by element under a custom allocator:
// 1.6% of a moe-small step in perf, from the experts' buffers).
struct ActBuffer : std::vector<float, UnsetAllocator<float>> {
    using std::vector<float, UnsetAllocator<float>>::vector;
    void resize(size_t n) {
        if (n > capacity()) clear();
        std::vector<float, UnsetAllocator<float>>::resize(n);
    }
};

// fn(begin, end) over parts of [0, n) on the pool's threads, at least
// min_part items each (a single call inline when n is smaller than two parts):
// for the memory-bound fills and copies between kernels, which on the calling
// thread alone left the other thread idle (perf, two threads: memset 3.8 % of
// a dense-small step's samples, all on the calling thread).
void for_parts(size_t n, size_t min_part, const std::function<void(size_t, size_t)>& fn);
// 1 MB: below a few such parts a second thread's wake-up costs more than it saves.
inline constexpr size_t kFloatsPerPart = size_t{1} << 18;
// p[0..n) = 0, in parts.
void zero_floats(float* p, size_t n);
// dst[0..n) = src[0..n), in parts.
void copy_floats(float* dst, const float* src, size_t n);

// dst = src without the element-by-element copy an ActBuffer's assignment
// makes through its allocator.
inline void copy_into(ActBuffer& dst, std::span<const float> src) {
    dst.resize(src.size());
    copy_floats(dst.data(), src.data(), src.size());
}

// n floats in pages of their own, starting at zero: mapped when made and
// handed back to the system when destroyed, and only the pages something
// writes ever become resident. For the big buffers whose lifetimes do not
// nest with the heap's: a training step's gradient arena, which its backward
// fills layer by layer, the checkpointed layer inputs, each freed once its
// layer's backward is done, and the engines' per-step weight copies. In the
// heap (kept there for speed, heap.h) the freed inputs would stay resident,
// and a zeroed arena would be resident from the start: moe-deep's peak would
// hold both at once. The price is a page fault per 4 kB each step. Huge pages
// (MADV_HUGEPAGE) cut moe-deep's faults per step from about 46,000 to 6,000
// here but raise its first run's peak by 17 MB, so they are not asked for.
class PagedFloats {
public:
    PagedFloats() = default;
    explicit PagedFloats(size_t n);
    ~PagedFloats();
    PagedFloats(PagedFloats&& o) noexcept;
    PagedFloats& operator=(PagedFloats&& o) noexcept;
    PagedFloats(const PagedFloats&) = delete;
    PagedFloats& operator=(const PagedFloats&) = delete;

    float* data() { return p_; }
    const float* data() const { return p_; }
    size_t size() const { return n_; }
    std::span<float> span() { return {p_, n_}; }

private:
    float* p_ = nullptr;
    size_t n_ = 0;
};

// Makes the pages under p[0..n) resident and writable, changing no value,
// before a kernel's first touch. A fresh PagedFloats reads as the shared zero
// page, and the weight gradients' chains read C before they write it (they
// carry through it), so each page of a gradient arena would take a read fault,
// then a write fault whose TLB flush interrupts the other thread: 5 % of
// moe-deep's `bench` samples (perf: do_wp_page, smp_call_function_many_cond).
// One call per layer keeps the arena resident only a layer ahead of its backward.
void prefault_for_write(float* p, size_t n);

// Gradient scratch of n zeros, for kernels that add into their output. Where
// the first kernel can write it whole (GradStore::overwrite), an ActBuffer
// spares the zeroing.
struct GradBuffer : ActBuffer {
    explicit GradBuffer(size_t n);
};

}  // namespace mlk
