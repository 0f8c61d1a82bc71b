// The engines on a CUDA device (labels core;gpu; every test skips itself
// without one): under batch-invariant kernels the GPU rollout and the GPU
// training-engine log-probs equal the CPU engines' bit for bit, dense and
// MoE, fp32 and bf16, so a GPU rollout against a CPU trainer is truly on
// policy; under the fast kernels (cuBLAS, split-KV decode) they differ.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>

#include "core/config/model_builder.h"
#include "core/rl/session.h"
#include "tests/core/engines/device_compare.h"

using namespace mlk;
using namespace mlk::testdata;

#define MLK_REQUIRE_GPU() \
    if (mlk::cuda_devices() == 0) GTEST_SKIP() << "no CUDA device"

class CudaRollout : public ::testing::TestWithParam<std::tuple<const char*, Dtype>> {};

TEST_P(CudaRollout, BatchInvariantEqualsCpuBitwise) {
    MLK_REQUIRE_GPU();
    const auto [preset, dt] = GetParam();
    for (float temp : {1.0f, 0.7f}) {
        const RolloutCase c{preset, Family::batch_invariant, EngineNumerics::simple(dt), temp, 7};
        expect_same_rollout(rollout_on(c, nullptr), rollout_on(c, &cuda_device_ops("test")));
    }
}

TEST_P(CudaRollout, WholeModelLogprobsEqualCpuBitwise) {
    MLK_REQUIRE_GPU();
    const auto [preset, dt] = GetParam();
    const EngineNumerics n = EngineNumerics::simple(dt);
    for (bool r3 : {false, true})
        expect_same_sequence_forward(
            sequence_forward_on(preset, Family::batch_invariant, n, r3, nullptr),
            sequence_forward_on(preset, Family::batch_invariant, n, r3, &cuda_device_ops("test")));
}

// The training engine on the GPU: its log-probs and gradients (a backward and
// a mini-step's second one adding into them) are the CPU engine's.
TEST_P(CudaRollout, TrainingGradientsEqualCpuBitwise) {
    MLK_REQUIRE_GPU();
    const auto [preset, dt] = GetParam();
    const bool moe = std::string(preset).find("moe") != std::string::npos;
    const EngineNumerics n = EngineNumerics::simple(dt);
    expect_same_training(train_on(preset, Family::batch_invariant, n, moe, nullptr),
                         train_on(preset, Family::batch_invariant, n, moe, &cuda_device_ops("test")));
}

INSTANTIATE_TEST_SUITE_P(CudaEngines, CudaRollout,
                         ::testing::Combine(::testing::Values("dense-tiny", "moe-tiny", "dense-small", "moe-small"),
                                            ::testing::Values(Dtype::f32, Dtype::bf16)),
                         case_name<Dtype>);

// A GPU rollout against a CPU trainer, both batch-invariant at one precision:
// every response token's rollout log-prob is the trainer's (K3 = 0).
TEST(CudaEngines, GpuRolloutCpuTrainerIsTrulyOnPolicy) {
    MLK_REQUIRE_GPU();
    for (const char* preset : {"dense-tiny", "moe-tiny"}) {
        const ModelConfig cfg = model_preset(preset);
        std::vector<float> params = initial_params(cfg, 42);
        const EngineNumerics n = EngineNumerics::simple(Dtype::bf16);
        RolloutEngine roll(cfg, &cuda_device_ops("test"));
        roll.load_weights(params, n);
        SamplingParams sp;
        sp.temperature = 0.7f;
        const RolloutResult r = roll.generate(Family::batch_invariant, ragged_prompts(24, 5), 12, sp, 1234, 7);
        const SeqBatch batch = to_seq_batch(r);
        TrainEngine train(cfg);
        const TrainForward& f =
            train.forward(Family::batch_invariant, n, params, batch, 1.0f / sp.temperature, nullptr, false);
        size_t tokens = 0, equal = 0;
        for (int i = 0; i < batch.B; ++i) {
            const RolloutSequence& s = r.sequences[i];
            for (size_t j = 0; j < s.lp_processed.size(); ++j, ++tokens)
                equal += float_bits(s.lp_processed[j]) == float_bits(f.logp[(size_t)i * batch.T + s.prompt_len + j]);
        }
        EXPECT_GT(tokens, 100u) << preset;
        EXPECT_EQ(equal, tokens) << preset;
    }
}

// The fast family on the GPU is production's: the same model's log-probs
// differ from the CPU's somewhere, and stay close.
TEST(CudaEngines, FastFamilyMismatchesTheCpu) {
    MLK_REQUIRE_GPU();
    for (const char* preset : {"dense-small", "moe-small"}) {
        const EngineNumerics n = EngineNumerics::simple(Dtype::f32);
        const SequenceForward cpu = sequence_forward_on(preset, Family::fast, n, false, nullptr);
        const SequenceForward gpu = sequence_forward_on(preset, Family::fast, n, false, &cuda_device_ops("test"));
        ASSERT_EQ(cpu.lp_rows.size(), gpu.lp_rows.size());
        size_t diff = 0;
        double worst = 0;
        for (size_t i = 0; i < cpu.lp_rows.size(); ++i) {
            diff += float_bits(cpu.lp_rows[i]) != float_bits(gpu.lp_rows[i]);
            worst = std::max(worst, (double)std::fabs(cpu.lp_rows[i] - gpu.lp_rows[i]));
        }
        EXPECT_GT(diff, 0u) << preset;
        EXPECT_LT(worst, 1e-2) << preset;
    }
}

// A whole RL run with both engines on the GPU (weight syncs, the host
// optimizer stepping the weights by the GPU's gradients, a second step from
// the weights the first one left) is the CPU's run: under batch-invariant
// kernels every recorded metric but the timings equals the CPU's bit for bit;
// under the fast kernels some differ.
TEST(CudaEngines, AnRlRunOnTheGpuIsTheCpusRunBitForBit) {
    MLK_REQUIRE_GPU();
    for (const char* preset : {"dense-tiny", "moe-tiny"})
        for (bool batch_invariant : {true, false}) {
            std::vector<std::vector<std::pair<std::string, double>>> runs;  // per device: (name, value) of 2 steps
            for (Device d : {Device::cpu, Device::cuda}) {
                Config cfg;  // a model preset's default run, as `run --preset` makes it
                cfg.model = preset_settings(preset);
                cfg.kernels.batch_invariant = batch_invariant;
                cfg.rollout.device = cfg.train.device = d;
                RlSession session(cfg, initial_params(model_config_of(cfg), (uint64_t)cfg.seed), nullptr, 0, "", 0);
                auto& run = runs.emplace_back();
                for (int step = 0; step < 2; ++step)
                    for (const auto& [name, value] : session.step().metrics) {
                        const MetricInfo* info = find_metric(name);
                        if (!info || info->group != "Speed") run.emplace_back(std::to_string(step) + " " + name, value);
                    }
            }
            ASSERT_EQ(runs[0].size(), runs[1].size()) << preset;
            ASSERT_GT(runs[0].size(), 50u) << preset;
            size_t differ = 0;
            for (size_t i = 0; i < runs[0].size(); ++i) {  // in the order the session records them
                ASSERT_EQ(runs[0][i].first, runs[1][i].first) << preset;
                const bool same =
                    std::bit_cast<uint64_t>(runs[0][i].second) == std::bit_cast<uint64_t>(runs[1][i].second);
                differ += !same;
                if (batch_invariant) {
                    EXPECT_TRUE(same) << preset << " " << runs[0][i].first << ": cpu " << runs[0][i].second << ", gpu "
                                      << runs[1][i].second;
                }
            }
            if (!batch_invariant) {
                EXPECT_GT(differ, 0u) << preset << ": the fast family's GPU run is the CPU's";
            }
        }
}
