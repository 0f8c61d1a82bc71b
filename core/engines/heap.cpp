#include "core/engines/heap.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace mlk {

void keep_step_buffers_in_heap() {
#if defined(__GLIBC__)
    static const bool done = [] {
        mallopt(M_MMAP_THRESHOLD, 32 << 20);
        mallopt(M_TRIM_THRESHOLD, 512 << 20);
        // One arena for every thread: the pool's workers allocate MoE expert
        // buffers too, and in arenas of their own a block one thread freed
        // could not serve the next step's allocation on another. moe-deep's
        // peak RSS, 3 cached steps: 722-785 MB with per-thread arenas,
        // 658-713 MB with one (no slower: two threads share it).
        mallopt(M_ARENA_MAX, 1);
        return true;
    }();
    (void)done;
#endif
}

namespace {
// Set before main, before any thread exists: a thread that allocates before
// M_ARENA_MAX takes effect keeps an arena of its own for good. The pool's
// worker would whenever a base policy loads before the first engine is made,
// and its arena would hold 10 MB at the MoE deep presets' peak (3 cached steps
// of fp8-unified-moe-deep: 297.9-300.3 MB, 291.7-293.9 with one arena).
[[maybe_unused]] const bool kPolicyBeforeMain = (keep_step_buffers_in_heap(), true);
}  // namespace

void return_free_heap() {
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

}  // namespace mlk
