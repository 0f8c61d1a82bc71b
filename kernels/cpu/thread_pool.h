// The process-wide worker pool behind set_num_threads()/num_threads(). The
// thread count is per application thread (a probe on the GUI's thread and a
// run on the worker thread each keep their own, and with it their fast
// family's reduction plans); the pool grows to the largest count asked for
// and each region uses at most its caller's.
// Work is split statically: a region of n tasks on T threads is cut into
// P = min(4T, n) fixed parts, part p = the contiguous tasks [p*n/P, (p+1)*n/P);
// the caller and the T-1 persistent workers claim parts until none is left, so
// a descheduled worker never stalls the caller for long. The split never
// changes a result's bits: batch-invariant kernels and all backward kernels only
// split disjoint outputs whose reduction order is fixed, and the fast family
// reads num_threads() (the configured count, not the threads that happen to run)
// when it picks a reduction plan. A parallel region started while another is
// running (another application thread, or a nested call) runs serially in the
// caller. Workers spin ~300 us after a region, then sleep on a condition variable.
#pragma once

#include <cstdint>
#include <type_traits>
#include <utility>

namespace mlk::cpu {

using RangeFn = void (*)(void* ctx, int begin, int end);
void parallel_run(int ntasks, RangeFn fn, void* ctx);

// f(begin, end) over contiguous task ranges; serial when !threaded.
template <class F>
void parallel_for(int ntasks, F&& f, bool threaded = true) {
    if (ntasks <= 0) return;
    if (!threaded || ntasks == 1) {
        f(0, ntasks);
        return;
    }
    using Fn = std::remove_reference_t<F>;
    parallel_run(
        ntasks, [](void* ctx, int b, int e) { (*static_cast<Fn*>(ctx))(b, e); },
        const_cast<void*>(static_cast<const void*>(&f)));
}

// Work (in flops or element-ops) below which kernels stay on one thread.
inline constexpr double kParallelWork = 3.0e5;

}  // namespace mlk::cpu
