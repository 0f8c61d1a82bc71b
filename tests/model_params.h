// A model's parameters as init_params draws them, for the engine suites.
#pragma once

#include <cstdint>
#include <vector>

#include "core/model/model.h"
#include "core/model/params.h"

namespace mlk::testdata {

inline std::vector<float> model_params(const ModelConfig& cfg, uint64_t seed) {
    const ParamLayout layout = make_param_layout(cfg);
    std::vector<float> params(layout.total);
    init_params(cfg, layout, params.data(), seed);
    return params;
}

}  // namespace mlk::testdata
