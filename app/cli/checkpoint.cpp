// `checkpoint`: a model's initial weights as a safetensors checkpoint with an
// HF config.json, for `probe --checkpoint` and for transformers.
#include <cstdio>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "core/model/checkpoint.h"
#include "core/model/model.h"

namespace mlk::cli {

int cmd_checkpoint(const Argv& argv) {
    Spec spec;
    spec.values = {"--preset", "--out", "--set", "--config"};
    spec.repeatable = {"--set"};
    const Args a = parse_args(argv, spec);
    const Config c = build_config(a);
    const std::string out = directory_option(a, "--out", "");
    ModelConfig m = model_config_of(c);
    ParamLayout layout = make_param_layout(m);
    std::vector<float> params(layout.total);
    init_params(m, layout, params.data(), (uint64_t)c.seed);
    save_checkpoint(out, m, layout, params.data(), {{"seed", std::to_string(c.seed)}, {"source", "initial weights"}});
    std::printf("wrote %s/model.safetensors and %s/config.json (%s, %lld parameters)\n", out.c_str(), out.c_str(),
                m.preset_name().c_str(), (long long)layout.total);
    return 0;
}

}  // namespace mlk::cli
