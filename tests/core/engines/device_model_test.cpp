// The engines' device path (core/engines/device_model.h) on the host device:
// the CPU kernels behind DeviceOps, so the model on a device, its uploads,
// downloads, KV cache and MoE grouping run in every build. With the same
// kernels it must equal the CPU engines bit for bit in both families, every
// profile and sampling path; cuda_engines_test holds the GPU its batch-invariant half.
#include <gtest/gtest.h>

#include <stdexcept>

#include "core/config/config.h"
#include "core/rl/probe.h"
#include "tests/core/engines/device_compare.h"

using namespace mlk;
using namespace mlk::testdata;

namespace {

EngineNumerics profile(NumericsProfile p, Dtype kv = Dtype::f32) {
    Config c;
    c.rollout.profile = p;
    EngineNumerics n = rollout_numerics(c);
    if (kv != Dtype::f32) n.kv_cache = kv;
    return n;
}

}  // namespace

class HostDeviceRollout : public ::testing::TestWithParam<std::tuple<const char*, Family>> {};

TEST_P(HostDeviceRollout, EqualsCpuEngineBitwise) {
    const auto [preset, family] = GetParam();
    const std::vector<std::pair<EngineNumerics, float>> cases = {
        {EngineNumerics::simple(Dtype::f32), 1.0f},
        {EngineNumerics::simple(Dtype::bf16), 0.8f},
        {profile(NumericsProfile::vllm_bf16, Dtype::fp8_e4m3), 1.0f},  // fp8 KV cache
        {profile(NumericsProfile::sglang_fp8), 0.7f},                  // W8A8 GEMMs
    };
    for (const auto& [numerics, temp] : cases) {
        SCOPED_TRACE(numerics_text(numerics, true) + ", T " + std::to_string(temp));
        const RolloutCase c{preset, family, numerics, temp, 7};
        expect_same_rollout(rollout_on(c, nullptr), rollout_on(c, &host_device_ops()));
    }
}

INSTANTIATE_TEST_SUITE_P(DeviceModel, HostDeviceRollout,
                         ::testing::Combine(::testing::Values("dense-tiny", "moe-tiny"),
                                            ::testing::Values(Family::batch_invariant, Family::fast)),
                         case_name<Family>);

class HostDeviceSequences : public ::testing::TestWithParam<std::tuple<const char*, Family>> {};

TEST_P(HostDeviceSequences, EqualTrainingEngineBitwise) {
    const auto [preset, family] = GetParam();
    for (bool r3 : {false, true}) {
        for (Dtype dt : {Dtype::f32, Dtype::bf16}) {
            SCOPED_TRACE(std::string(dtype_name(dt)) + (r3 ? ", R3" : ""));
            const EngineNumerics n = EngineNumerics::simple(dt);
            expect_same_sequence_forward(sequence_forward_on(preset, family, n, r3, nullptr),
                                         sequence_forward_on(preset, family, n, r3, &host_device_ops()));
        }
    }
}

INSTANTIATE_TEST_SUITE_P(DeviceModel, HostDeviceSequences,
                         ::testing::Combine(::testing::Values("dense-tiny", "moe-tiny"),
                                            ::testing::Values(Family::batch_invariant, Family::fast)),
                         case_name<Family>);

class HostDeviceTraining : public ::testing::TestWithParam<std::tuple<const char*, Family>> {};

// Forward for backward, backward, and a second (mini-step) backward adding
// into the same gradients: the dense model's LM head is tied (its gradient
// goes into the embedding), the MoE model's is not and replays its routes.
TEST_P(HostDeviceTraining, GradientsEqualTrainingEngineBitwise) {
    const auto [preset, family] = GetParam();
    const bool moe = std::string(preset).find("moe") != std::string::npos;
    for (Dtype dt : {Dtype::f32, Dtype::bf16}) {
        SCOPED_TRACE(dtype_name(dt));
        const EngineNumerics n = EngineNumerics::simple(dt);
        expect_same_training(train_on(preset, family, n, moe, nullptr),
                             train_on(preset, family, n, moe, &host_device_ops()));
    }
}

INSTANTIATE_TEST_SUITE_P(DeviceModel, HostDeviceTraining,
                         ::testing::Combine(::testing::Values("dense-tiny", "moe-tiny"),
                                            ::testing::Values(Family::batch_invariant, Family::fast)),
                         case_name<Family>);

// The comparison can fail: another precision on the device changes the bits.
TEST(DeviceModel, ComparisonSeesADifferentPrecision) {
    const RolloutCase cpu{"dense-tiny", Family::batch_invariant, EngineNumerics::simple(Dtype::f32), 1.0f, 0};
    RolloutCase dev = cpu;
    dev.numerics = EngineNumerics::simple(Dtype::bf16);
    size_t tokens = 0;
    const size_t diff = rollout_lp_diffs(rollout_on(cpu, nullptr), rollout_on(dev, &host_device_ops()), &tokens);
    EXPECT_GT(tokens, 20u);
    EXPECT_GT(diff, 0u);
}

// On a GPU the device path counts the FLOPs the CPU kernels count for
// themselves (bench's GFLOP/s): on a host device that leaves them to it, the
// count doubles exactly, in the prefill, the decode and the sequences' forward.
TEST(DeviceModel, CountsTheFlopsTheCpuKernelsCount) {
    for (const char* preset : {"dense-tiny", "moe-tiny"}) {
        const RolloutCase c{preset, Family::fast, EngineNumerics::simple(Dtype::bf16), 1.0f, 7};
        const HostDeviceOps self_counting(false);
        double f0 = kernel_flop_count();
        rollout_on(c, &host_device_ops());
        const double kernels = kernel_flop_count() - f0;
        f0 = kernel_flop_count();
        rollout_on(c, &self_counting);
        EXPECT_GT(kernels, 0.0);
        EXPECT_DOUBLE_EQ(kernel_flop_count() - f0, 2 * kernels) << preset << " rollout";
        // sequence_forward_on runs one CPU rollout first, the same in both.
        const EngineNumerics n = EngineNumerics::simple(Dtype::f32);
        f0 = kernel_flop_count();
        sequence_forward_on(preset, Family::fast, n, false, &host_device_ops());
        const double with_rollout = kernel_flop_count() - f0;
        f0 = kernel_flop_count();
        sequence_forward_on(preset, Family::fast, n, false, &self_counting);
        const double doubled = kernel_flop_count() - f0;
        f0 = kernel_flop_count();
        rollout_on({preset, Family::batch_invariant, n, 1.0f, 6}, nullptr);
        const double rollout_only = kernel_flop_count() - f0;
        EXPECT_DOUBLE_EQ(doubled - rollout_only, 2 * (with_rollout - rollout_only)) << preset << " sequences";
        // train_on: the same CPU rollout, then two forwards and backwards.
        f0 = kernel_flop_count();
        train_on(preset, Family::fast, n, false, &host_device_ops());
        const double trained = kernel_flop_count() - f0;
        f0 = kernel_flop_count();
        train_on(preset, Family::fast, n, false, &self_counting);
        EXPECT_DOUBLE_EQ(kernel_flop_count() - f0 - rollout_only, 2 * (trained - rollout_only))
            << preset << " training";
    }
}

// rollout.device = cuda where there is no CUDA: a clear error naming the key
// and what is allowed, before any work.
TEST(DeviceModel, CudaWithoutCudaIsAClearError) {
    if (cuda_devices() > 0) GTEST_SKIP() << "a CUDA device is present";
    try {
        cuda_device_ops("rollout.device");
        FAIL() << "no error";
    } catch (const std::runtime_error& e) {
        const std::string msg = e.what();
        EXPECT_NE(msg.find("rollout.device = cuda"), std::string::npos) << msg;
        EXPECT_NE(msg.find("allowed here: cpu"), std::string::npos) << msg;
        EXPECT_NE(msg.find(cuda_built() ? "no CUDA device" : "no CUDA backend"), std::string::npos) << msg;
    }
    Config c;
    c.rollout.device = Device::cuda;
    EXPECT_THROW(run_probe(c, probe_initial_params(c)), std::runtime_error);
    EXPECT_EQ(device_ops_for(Device::cpu, "rollout.device"), nullptr);
}
