#include "core/rl/base_policy.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "core/config/stable_hash.h"
#include "core/model/buffers.h"
#include "core/model/checkpoint.h"
#include "core/model/model.h"
#include "core/rl/optim.h"
#include "core/engines/rollout_engine.h"
#include "core/engines/train_engine.h"
#include "core/model/vocab.h"
#include "kernels/kernels.h"

namespace mlk {

namespace fs = std::filesystem;

std::string default_cache_dir() {
    if (const char* d = std::getenv("MLK_CACHE_DIR"); d && *d) return d;
    if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/mismatch-lab";
    if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/mismatch-lab";
    return (fs::temp_directory_path() / "mismatch-lab").string();
}

namespace {
// The thread count the warm-up's fast kernels split their sums by.
int warm_up_threads(const Config& c) { return c.kernels.threads > 0 ? c.kernels.threads : num_threads(); }
}  // namespace

std::string base_policy_key(const Config& c) {
    // Everything that changes the warm-up's result goes into the key: the
    // weights it trains (task, model, base, seed, and the thread count the
    // fast kernels split their sums by) and when it stops (the held-out
    // evaluation samples with the rollout settings and kernel family and
    // scores with task.partial_credit). The readable prefix helps a person
    // find it, the hash makes it exact.
    const nlohmann::json j = config_to_json(c);
    // The growth settings enter resolved (auto as its depth) and only when
    // the warm-up grows: a model trained directly is keyed without them,
    // whatever they say.
    nlohmann::json base = j["base"];
    if (const int from = base_growth_layers(c); from > 0) base["grow_from_layers"] = from;
    else
        for (const char* unused : {"grow_from_layers", "grow_steps", "grow_lr"}) base.erase(unused);
    nlohmann::json k = {{"task", j["task"]},
                        {"model", j["model"]},
                        {"model_preset", model_config_of(c).preset_name()},
                        {"rollout", j["rollout"]},
                        {"batch_invariant", c.kernels.batch_invariant},
                        {"threads", warm_up_threads(c)},
                        {"seed", c.seed},
                        {"base", base},
                        {"format", 3}};
    const std::string hex = fnv1a_hex(k.dump(), kStoredNameBasis);
    return "base-" + std::string(enum_name(c.task.name)) + std::to_string(c.task.length) + "-" +
           model_config_of(c).preset_name() + "-s" + std::to_string(c.seed) + "-" + hex.substr(0, 8);
}

double evaluate_policy(const Config& cfg, std::vector<float>& params, const Task& task, int n) {
    return evaluate_policy(cfg, model_config_of(cfg), params, task, n);
}

double evaluate_policy(const Config& cfg, const ModelConfig& m, std::vector<float>& params, const Task& task, int n) {
    std::vector<Prompt> eval = task.eval_set((size_t)n);
    std::vector<std::vector<int32_t>> prompts;
    for (const auto& p : eval) prompts.push_back(p.tokens);
    RolloutEngine roll(m);
    roll.load_weights(params, rollout_numerics(cfg));
    SamplingParams sp{(float)cfg.rollout.temperature, cfg.rollout.top_k, (float)cfg.rollout.top_p};
    const Family fam = cfg.kernels.batch_invariant ? Family::batch_invariant : Family::fast;
    RolloutResult r =
        roll.generate(fam, prompts, task.max_answer_tokens() + 1, sp, hash_u64((uint64_t)cfg.seed, 0xe7a1),
                      cfg.rollout.max_batch, task_environment(task, eval, 1));
    double sum = 0;
    for (size_t i = 0; i < eval.size(); ++i) {
        const auto& s = r.sequences[i];
        std::vector<int32_t> resp(s.tokens.begin() + s.prompt_len, s.tokens.end());
        sum += task.reward(eval[i], resp, cfg.task.partial_credit);
    }
    return eval.empty() ? 0.0 : sum / (double)eval.size();
}

SftBatch sft_batch(const Task& task, uint64_t stream, int step, int batch_size) {
    std::vector<std::vector<int32_t>> seqs;
    std::vector<std::vector<uint8_t>> env;
    std::vector<int32_t> prompt_lens;
    for (int i = 0; i < batch_size; ++i) {
        Prompt p = task.sample(stream, (uint64_t)step * batch_size + i);
        std::vector<int32_t> s = p.tokens, tgt = task.target(p);
        env.push_back(task.environment_mask(p, tgt));
        prompt_lens.push_back((int)s.size());
        s.insert(s.end(), tgt.begin(), tgt.end());
        seqs.push_back(std::move(s));
    }
    SftBatch out;
    out.batch = make_seq_batch(seqs, prompt_lens);
    const SeqBatch& b = out.batch;
    out.target.assign((size_t)b.B * b.T, 0);
    for (int i = 0; i < b.B; ++i)
        for (int t = b.prompt_lens[i]; t < b.lengths[i]; ++t)
            if (!env[i][t - b.prompt_lens[i]]) {
                out.target[(size_t)i * b.T + t] = 1;
                ++out.targets;
            }
    return out;
}

namespace {

// What every stage of one warm-up shares: its demonstrations' stream, the
// progress it reports and the stop flag.
struct WarmUp {
    const Config& cfg;
    const Task& task;
    uint64_t stream;
    const std::function<void(const BaseProgress&)>& progress;
    const std::atomic<bool>* cancel;
    BaseProgress pr;
};

// Trains `params` (model m) on the stream's demonstrations from step `first`
// on: at most max_steps steps, evaluated every 25 and at the last, stopping
// at the first evaluation from step min_steps on that reaches
// base.target_reward. Returns the steps taken.
int train_stage(WarmUp& w, const ModelConfig& m, std::vector<float>& params, int first, int max_steps, int min_steps,
                double lr) {
    const Config& cfg = w.cfg;
    const ParamLayout layout = make_param_layout(m);
    TrainEngine train(m);
    AdamW opt;
    AdamWSettings as;
    as.lr = lr;
    as.grad_clip = 1.0;
    std::vector<float> grads;
    const int bs = cfg.base.batch_size;
    BaseProgress& pr = w.pr;
    pr.layers = m.num_layers;
    int step = 0;
    for (; step < max_steps; ++step) {
        if (w.cancel && w.cancel->load()) throw WarmupCancelled();
        const SftBatch sb = sft_batch(w.task, w.stream, first + step, bs);
        const SeqBatch& b = sb.batch;
        const TrainForward& f =
            train.forward(Family::fast, EngineNumerics::simple(Dtype::f32), params, b, 1.0f, nullptr);
        std::vector<float> dlogp((size_t)bs * b.T, 0.0f);
        double loss = 0;
        for (size_t at = 0; at < dlogp.size(); ++at)
            if (sb.target[at]) {
                loss -= f.logp[at];
                dlogp[at] = -1.0f / (float)sb.targets;
            }
        grads.resize(layout.total);
        zero_floats(grads.data(), grads.size());  // on the pool: 0.5 s of moe-small's warm-up on one thread
        train.backward(grads, dlogp);
        opt.update(params, grads, as, as.lr);
        pr.step = first + step + 1;
        pr.loss = loss / sb.targets;
        const bool eval_now = (step + 1) % 25 == 0 || step + 1 == max_steps;
        if (eval_now) {
            // The evaluation's rollout engine (a weight copy, its KV cache)
            // takes the memory of the step's gradients and activations, which
            // the next step makes afresh: with both at once moe-deep's first
            // run would peak here.
            train.release_activations();
            std::vector<float>().swap(grads);
            pr.eval_reward = evaluate_policy(cfg, m, params, w.task, cfg.task.eval_size);
        }
        if (w.progress) w.progress(pr);
        if (eval_now && step + 1 >= min_steps && pr.eval_reward >= cfg.base.target_reward) {
            ++step;
            break;
        }
    }
    return step;
}

}  // namespace

BasePolicy make_base_policy(const Config& cfg, const std::string& cache_dir,
                            const std::function<void(const BaseProgress&)>& progress, const std::atomic<bool>* cancel) {
    // The thread count is part of the key: apply it before the key is made.
    if (cfg.kernels.threads > 0) set_num_threads(cfg.kernels.threads);
    BasePolicy out;
    out.path = (fs::path(cache_dir) / base_policy_key(cfg)).string();
    const ModelConfig m = model_config_of(cfg);
    const ParamLayout layout = make_param_layout(m);
    if (fs::exists(fs::path(out.path) / "model.safetensors")) {
        try {
            LoadedCheckpoint ck = load_checkpoint(out.path);
            if ((int64_t)ck.params.size() == layout.total) {
                out.params = std::move(ck.params);
                out.eval_reward = ck.metadata.value("eval_reward", 0.0);
                out.sft_steps = ck.metadata.value("sft_steps", 0);
                out.grown_from_layers = ck.metadata.value("grown_from_layers", 0);
                out.shallow_steps = ck.metadata.value("shallow_steps", 0);
                out.from_cache = true;
                return out;
            }
        } catch (const std::exception&) {
            // A damaged cache entry is rebuilt below, not trusted.
        }
    }

    auto task = make_task(enum_name(cfg.task.name), cfg.task.length);
    out.params.assign(layout.total, 0.0f);
    init_params(m, layout, out.params.data(), (uint64_t)cfg.seed);
    WarmUp w{cfg, *task, hash_u64((uint64_t)cfg.seed, 0xba5e), progress, cancel, {}};
    w.pr.total = cfg.base.sft_steps;
    w.pr.model_layers = m.num_layers;
    const int sft = cfg.base.sft_steps;
    int steps = 0;
    if (const int from = base_growth_layers(cfg); from > 0) {
        // Depth up-scaling: the shallow model crosses the plateau where a deep
        // one spends most of its warm-up, at a fraction of the cost per step.
        const ModelConfig ms = shallow_model(m, from);
        const ParamLayout ls = make_param_layout(ms);
        std::vector<float> shallow(ls.total);
        init_params(ms, ls, shallow.data(), (uint64_t)cfg.seed);
        const int grow_steps = std::min(cfg.base.grow_steps, sft);
        out.shallow_steps = train_stage(w, ms, shallow, 0, sft - grow_steps, 0, cfg.base.lr);
        grow_params(out.params.data(), m, layout, shallow.data(), ms, ls);
        out.grown_from_layers = from;
        std::vector<float>().swap(shallow);  // done with: the full model's state comes next
        steps = out.shallow_steps +
                train_stage(w, m, out.params, out.shallow_steps, sft - out.shallow_steps, grow_steps, cfg.base.grow_lr);
    } else {
        steps = train_stage(w, m, out.params, 0, sft, 0, cfg.base.lr);
    }
    out.eval_reward = sft == 0 ? evaluate_policy(cfg, out.params, *task, cfg.task.eval_size) : w.pr.eval_reward;
    out.sft_steps = steps;
    fs::create_directories(cache_dir);
    save_checkpoint(out.path, m, layout, out.params.data(),
                    {{"eval_reward", out.eval_reward},
                     {"sft_steps", out.sft_steps},
                     {"grown_from_layers", out.grown_from_layers},
                     {"shallow_steps", out.shallow_steps},
                     {"key", base_policy_key(cfg)}});
    return out;
}

}  // namespace mlk
