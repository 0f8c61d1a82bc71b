// Where a run's numbers are made, for the run's record and reports.
#pragma once

#include <string>

#include "core/config/config.h"

namespace mlk {

// The processor's model name (/proc/cpuinfo's "model name"), else "unknown CPU".
std::string cpu_model_name();

// The CPU, its SIMD path and the kernel threads a run of c gets, then the GPU
// of each engine c places on one, e.g. "AMD EPYC 9B14 96-Core Processor,
// SIMD avx512, 2 kernel threads; rollout and training on CUDA: NVIDIA H200
// (sm_90, 132 SMs)". A run's timings depend on all of it, and on a GPU the
// fast family's bits too (its split-K follows the device's multiprocessors),
// so two runs of one configuration may differ where these do. Throws as
// check_devices when c asks for a device this machine lacks.
std::string machine_description(const Config& c);

}  // namespace mlk
