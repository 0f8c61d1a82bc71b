// The training engine's memory: when it checkpoints, and which pages of a
// fresh gradient arena its backward maps.
#include <gtest/gtest.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "core/config/config.h"
#include "core/engines/heap.h"
#include "core/engines/numerics.h"
#include "core/engines/train_engine.h"
#include "core/model/buffers.h"
#include "core/model/model.h"
#include "core/model/vocab.h"
#include "tests/token_sequences.h"

using namespace mlk;

namespace {

// 16 sequences of 5 to 11 tokens, drawn from `seed`, each its own prompt's first token.
std::vector<std::vector<int32_t>> sequences(uint64_t seed) { return testdata::token_sequences(16, seed, 4, 7); }

}  // namespace

// The heap policy holds from before main: threads that allocate before any
// engine exists (the pool's worker loading a base policy, a thread of the
// caller's) share the one arena. A thread that allocated first kept an arena
// of its own for good, whose free blocks no other thread could reuse: 10 MB
// of the MoE deep presets' peak. First in this file, so run alone it is also
// first in the process.
TEST(Engines, ThreadsShareOneHeapArenaBeforeAnyEngineExists) {
#if defined(__GLIBC__)
    std::thread([] {
        std::vector<float> block(1 << 18, 1.0f);
        EXPECT_EQ(block.back(), 1.0f);
    }).join();
    parallel_tasks(4, nullptr, [](int i) {
        std::vector<float> block(1 << 16, (float)i);
        EXPECT_EQ(block.back(), (float)i);
    });
    char* text = nullptr;
    size_t len = 0;
    FILE* out = open_memstream(&text, &len);
    ASSERT_NE(out, nullptr);
    malloc_info(0, out);
    fclose(out);
    const std::string xml(text, len);
    std::free(text);
    size_t arenas = 0;
    for (size_t at = xml.find("<heap nr="); at != std::string::npos; at = xml.find("<heap nr=", at + 1)) ++arenas;
    EXPECT_EQ(arenas, 1u) << xml.substr(0, 400);
    keep_step_buffers_in_heap();  // idempotent: the engines call it again
#else
    GTEST_SKIP() << "glibc's arenas only";
#endif
}

// The engine checkpoints when the kept activations and the training state
// beside them (master, gradients, AdamW's moments: 16 bytes a parameter) pass
// the threshold. moe-deep's warm-up batch (32 sequences of 14 tokens) keeps
// 54 MB of activations, far below it alone, but beside its 237 MB of state it
// crosses it; moe-small's full RL batch keeps 140 MB beside 41 MB and does not.
TEST(Engines, CheckpointingCountsTheTrainingStateBesideTheActivations) {
    const auto bytes = [](const ModelConfig& m, double S, double T) {
        return TrainEngine::kept_activation_floats(m, S, T, false) * sizeof(float);
    };
    const auto state = [](const ModelConfig& m) {
        return (double)make_param_layout(m).total * TrainEngine::kTrainingStateBytesPerParam;
    };
    const ModelConfig deep = model_preset("moe-deep"), small = model_preset("moe-small");
    const ModelConfig dense_deep = model_preset("dense-deep");
    EXPECT_LT(bytes(deep, 32, 14), TrainEngine::kFullRecomputeBytes / 4);
    EXPECT_GT(state(deep) + bytes(deep, 32, 14), TrainEngine::kFullRecomputeBytes);
    EXPECT_TRUE(TrainEngine::full_recompute_for(deep, 32, 14));
    EXPECT_FALSE(TrainEngine::full_recompute_for(small, 256, 14));
    EXPECT_FALSE(TrainEngine::full_recompute_for(dense_deep, 32, 14));  // its warm-up keeps
    EXPECT_TRUE(TrainEngine::full_recompute_for(dense_deep, 256, 14));  // its RL batch's activations alone cross
    EXPECT_FALSE(TrainEngine::full_recompute_for(model_preset("dense-tiny"), 256, 15));
}

// The backward maps a fresh gradient arena's pages for writing layer by
// layer, and an MoE layer's experts only where tokens were routed: with every
// token replayed to experts 0 and 1, the other experts' gradients stay
// unmapped (a third of moe-deep's experts get no token in an RL step).
TEST(Engines, BackwardMapsNoPagesForExpertsWithoutTokens) {
    const ModelConfig cfg = model_preset("moe-tiny");
    std::vector<float> params((size_t)make_param_layout(cfg).total);
    init_params(cfg, make_param_layout(cfg), params.data(), 3);
    const std::vector<std::vector<int32_t>> seqs = sequences(9);
    const SeqBatch batch = make_seq_batch(seqs, std::vector<int32_t>(seqs.size(), 1));
    const int k = cfg.num_experts_per_tok, M = batch.B * batch.T;
    ASSERT_GE(cfg.num_experts, k + 2);
    std::vector<std::vector<int32_t>> table(cfg.moe_layers().size(), std::vector<int32_t>((size_t)M * k));
    for (auto& layer : table)
        for (int m = 0; m < M; ++m)
            for (int j = 0; j < k; ++j) layer[(size_t)m * k + j] = j;
    std::vector<float> dlogp((size_t)M);
    for (size_t i = 0; i < dlogp.size(); ++i) dlogp[i] = (float)(hash_uniform(11, i) - 0.5);
    const size_t page = (size_t)sysconf(_SC_PAGESIZE);
    // Resident pages wholly inside arena[begin, end) (mincore).
    const auto resident = [&](const PagedFloats& arena, int64_t begin, int64_t end) {
        const uintptr_t a = ((uintptr_t)(arena.data() + begin) + page - 1) & ~(page - 1);
        const uintptr_t b = (uintptr_t)(arena.data() + end) & ~(page - 1);
        if (b <= a) return size_t{0};
        std::vector<unsigned char> in((b - a) / page);
        EXPECT_EQ(mincore(reinterpret_cast<void*>(a), b - a, in.data()), 0);
        return (size_t)std::count_if(in.begin(), in.end(), [](unsigned char c) { return (c & 1) != 0; });
    };
    for (bool full : {false, true}) {
        TrainEngine train(cfg);
        train.force_full_recompute(full);
        train.forward(Family::fast, EngineNumerics::simple(Dtype::f32), params, batch, 1.0f, &table);
        PagedFloats grads((size_t)train.layout().total);
        train.backward(grads, dlogp);
        for (int l : cfg.moe_layers())
            for (int e = 0; e < cfg.num_experts; ++e) {
                const std::string prefix =
                    "model.layers." + std::to_string(l) + ".mlp.experts." + std::to_string(e) + ".";
                int64_t begin = train.layout().total, end = 0;
                for (const ParamSpec& p : train.layout().specs)
                    if (p.name.rfind(prefix, 0) == 0)
                        begin = std::min(begin, p.offset), end = std::max(end, p.offset + p.numel);
                ASSERT_LT(begin, end) << prefix;
                const size_t pages = resident(grads, begin, end);
                if (e < k) EXPECT_GT(pages, 0u) << prefix << " full " << full;
                else EXPECT_EQ(pages, 0u) << prefix << " full " << full;
            }
    }
}

// A trainer that computes on cast weights (bf16, fp8) holds the embedding,
// the final norm and one layer of them, cast a layer at a time, not a cast
// copy of the model; on fp32 it computes on the master itself; released, it
// holds none.
TEST(Engines, ACastTrainerHoldsOneLayerOfCastWeights) {
    const ModelConfig cfg = model_preset("moe-tiny");
    const ParamLayout layout = make_param_layout(cfg);
    std::vector<float> params((size_t)layout.total);
    init_params(cfg, layout, params.data(), 3);
    const std::vector<std::vector<int32_t>> seqs = sequences(4);
    const SeqBatch batch = make_seq_batch(seqs, std::vector<int32_t>(seqs.size(), 1));
    EngineNumerics fp8 = EngineNumerics::simple(Dtype::bf16);
    fp8.matmul = Dtype::fp8_e4m3;
    for (const EngineNumerics& n : {EngineNumerics::simple(Dtype::bf16), fp8}) {
        TrainEngine train(cfg);
        train.forward(Family::fast, n, params, batch, 1.0f, nullptr);
        const int64_t held = (int64_t)train.held_cast_floats();
        EXPECT_EQ(held, TrainEngine::cast_weight_floats(cfg, n));
        const int64_t layer = layout.layers[0].all().end - layout.layers[0].all().begin;
        EXPECT_GE(held, layer);
        EXPECT_LT(held, 2 * layer) << "one layer and the embedding, not the model's " << layout.total;
        train.release_activations();
        EXPECT_EQ(train.held_cast_floats(), 0u);
    }
    TrainEngine on_master(cfg);
    on_master.forward(Family::fast, EngineNumerics::simple(Dtype::f32), params, batch, 1.0f, nullptr);
    EXPECT_EQ(on_master.held_cast_floats(), 0u);
    EXPECT_EQ(TrainEngine::cast_weight_floats(cfg, EngineNumerics::simple(Dtype::f32)), 0);
}
