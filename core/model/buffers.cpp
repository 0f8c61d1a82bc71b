#include "core/model/buffers.h"

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

GradBuffer::GradBuffer(size_t n) : ActBuffer(n) { zero_floats(data(), n); }

}  // namespace mlk
