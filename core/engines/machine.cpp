#include "core/engines/machine.h"

#include <fstream>

#include "core/engines/device.h"
#include "kernels/cpu/features.h"
#include "kernels/kernels.h"

namespace mlk {

std::string cpu_model_name() {
    std::ifstream f("/proc/cpuinfo");
    for (std::string line; std::getline(f, line);) {
        if (line.rfind("model name", 0) != 0) continue;
        const size_t colon = line.find(':');
        if (colon == std::string::npos) continue;
        const size_t first = line.find_first_not_of(" \t", colon + 1);
        if (first != std::string::npos) return line.substr(first, line.find_last_not_of(" \t") + 1 - first);
    }
    return "unknown CPU";
}

std::string machine_description(const Config& c) {
    // A fresh thread's count: the caller's own may have been set by an
    // earlier run on the same thread.
    const int threads = c.kernels.threads > 0 ? c.kernels.threads : default_num_threads();
    std::string s = cpu_model_name() + ", SIMD " + cpu::isa_name(cpu::active_isa()) + ", " + std::to_string(threads) +
                    (threads == 1 ? " kernel thread" : " kernel threads");
    const DeviceOps* rollout = device_ops_for(c.rollout.device, "rollout.device");
    const DeviceOps* train = device_ops_for(c.train.device, "train.device");
    if (rollout && rollout == train) s += "; rollout and training on " + rollout->name();
    else {
        if (rollout) s += "; rollout on " + rollout->name();
        if (train) s += "; training on " + train->name();
    }
    return s;
}

}  // namespace mlk
