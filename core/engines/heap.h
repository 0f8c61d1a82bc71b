// How the engines' step buffers come back from the C library's allocator.
#pragma once

namespace mlk {

// The engines allocate their activations, gradients and KV cache afresh each
// step (sized to that step's batch). glibc returns blocks over its mmap
// threshold to the kernel on free, so every step paid for page faults and
// zeroed pages again: 25% of the training phase on dense-small (`bench`,
// perf: exc_page_fault + clear_page_erms). Keeping blocks up to 32 MB (the
// most glibc allows) in the heap, and not trimming it, makes a step reuse
// the previous step's pages. All threads share the main arena (see
// heap.cpp). Process-wide and idempotent: the engines' constructors call it.
void keep_step_buffers_in_heap();

}  // namespace mlk
