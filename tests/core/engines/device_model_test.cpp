// The engines' device path (core/engines/device_model.h) on the host device:
// the CPU kernels behind DeviceOps, so the model on a device, its uploads,
// downloads, KV cache and MoE grouping run in every build. With the same
// kernels it must equal the CPU engines bit for bit in both families, every
// profile and sampling path; cuda_engines_test holds the GPU its batch-invariant half.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <vector>

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

namespace {

// The float-stored fp8 KV cache, as a reference for the one-byte cache: its
// rows quantised and dequantised in floats (quantize_activations per row of
// hd, store_kv's arithmetic) and kept as floats in a copy of the cache, read
// back as they are; the codes and scales are not written.
class FloatFp8KvOps final : public HostDeviceOps {
public:
    void store_kv_fp8(uint8_t* codes, float*, const int64_t* off, float* x, int M, int Hkv, int hd, Dtype fmt,
                      Fp8Scale kind) const override {
        const int64_t kv = (int64_t)Hkv * hd;
        quantize_activations(x, nullptr, x, M * Hkv, hd, fmt, kind, Fp8Granularity::channel);
        std::vector<float>& cache = caches_[codes];
        for (int r = 0; r < M; ++r) {
            if ((int64_t)cache.size() < off[r] + kv) cache.resize((size_t)(off[r] + kv));
            std::copy_n(x + r * kv, kv, cache.begin() + off[r]);
        }
    }
    void load_kv_fp8(float* out, const uint8_t* codes, const float*, const int32_t* slot, const int32_t* len,
                     int64_t cache_stride, int span, int Bq, int Hkv, int hd, Dtype) const override {
        const int64_t kv = (int64_t)Hkv * hd;
        const std::vector<float>& cache = caches_.at(codes);
        for (int b = 0; b < Bq; ++b)
            for (int t = 0; t < len[b]; ++t)
                std::copy_n(cache.begin() + slot[b] * cache_stride + t * kv, kv, out + ((int64_t)b * span + t) * kv);
    }

private:
    mutable std::map<const uint8_t*, std::vector<float>> caches_;
};

}  // namespace

// An fp8 KV cache holds a byte per value and a scale per (token, KV head),
// about a quarter of an fp32 cache, and its rollouts have the bits of a
// cache that keeps the same values as floats: on the CPU engine, on the
// device path, both formats and scale kinds, both families.
TEST_P(HostDeviceRollout, Fp8KvCacheInBytesEqualsTheFloatCache) {
    const auto [preset, family] = GetParam();
    for (Dtype kv : {Dtype::fp8_e4m3, Dtype::fp8_e5m2})
        for (Fp8Scale kind : {Fp8Scale::fp32, Fp8Scale::pow2}) {
            EngineNumerics n = profile(NumericsProfile::vllm_bf16, kv);
            n.fp8_scale = kind;
            SCOPED_TRACE(numerics_text(n, true) + (kind == Fp8Scale::fp32 ? ", fp32 scales" : ", pow2 scales"));
            const RolloutCase c{preset, family, n, 1.0f, 7};
            const FloatFp8KvOps floats;
            const RolloutResult want = rollout_on(c, &floats);
            expect_same_rollout(want, rollout_on(c, nullptr));
            expect_same_rollout(want, rollout_on(c, &host_device_ops()));
        }
    const ModelConfig cfg = model_preset(preset);
    const EngineNumerics f32 = EngineNumerics::simple(Dtype::f32);
    EngineNumerics fp8 = f32;
    fp8.kv_cache = Dtype::fp8_e4m3;
    const double ratio =
        RolloutEngine::kv_cache_bytes_per_token(cfg, fp8) / RolloutEngine::kv_cache_bytes_per_token(cfg, f32);
    EXPECT_DOUBLE_EQ(ratio, (cfg.head_dim + 4.0) / (4.0 * cfg.head_dim));
    // What a generate held, as the engine reports it.
    std::vector<float> params = initial_params(cfg, 42);
    size_t bytes[2] = {};
    for (int i = 0; i < 2; ++i) {
        RolloutEngine roll(cfg);
        roll.load_weights(params, i ? fp8 : f32);
        roll.generate(family, ragged_prompts(6, 3), 8, SamplingParams{}, 5, 0);
        bytes[i] = roll.kv_cache_bytes();
    }
    EXPECT_GT(bytes[0], 0u);
    // A quarter, plus a scale's 4 bytes per head_dim values.
    EXPECT_NEAR((double)bytes[1] / (double)bytes[0], 0.25 + 1.0 / cfg.head_dim, 1e-9) << bytes[1] << " of " << bytes[0];
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
