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
        return true;
    }();
    (void)done;
#endif
}

}  // namespace mlk
