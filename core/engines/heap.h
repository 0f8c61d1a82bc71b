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
// heap.cpp). Process-wide and idempotent: set before main (heap.cpp), so
// before any thread allocates, and again by the engines' constructors.
void keep_step_buffers_in_heap();

// Hands the heap's free pages back to the kernel. Called when an RL session
// starts: the pages the previous session's steps kept are fragments sized to
// its model, and the next session's buffers placed among them run slower than
// fresh ones. bench --preset dense-small --preset moe-small, two threads:
// moe-small's recompute 76-81 ms after dense-small, 46-54 ms alone or after a
// trim. Costs the new session one round of page faults.
void return_free_heap();

}  // namespace mlk
