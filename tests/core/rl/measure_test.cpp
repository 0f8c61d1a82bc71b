// The measurement pass's router diff, on hand-made routes: it counts the
// response tokens (the population of every other mismatch metric), each by
// the routes of the position that produced its log-prob.
#include <gtest/gtest.h>

#include "core/rl/measure.h"

using namespace mlk;

namespace {

// One MoE layer, top-2, two sequences (T = 6).
//   seq0: prompt positions 0..2, response tokens at 3, 4, 5 (5 never fed: -1)
//   seq1: prompt positions 0..1, response tokens at 2, 3 (3 never fed)
//   seq pos  rollout  train   d   counted as
//   0   0    {0,1}    {6,7}   2   - (a prompt position that predicts no response token)
//   0   1    {2,3}    {2,3}   0   -
//   0   2    {4,5}    {4,5}   0   response token at 3
//   0   3    {0,2}    {2,0}   0   response token at 4 (order inside the top-k does not matter)
//   0   4    {1,3}    {1,6}   1   response token at 5
//   0   5    -1       {3,4}   -   - (predicts nothing)
//   1   0    {0,1}    {0,1}   0   -
//   1   1    {2,3}    {2,7}   1   response token at 2 (the last prompt position predicts it)
//   1   2    {4,5}    {4,5}   0   response token at 3
//   1   3    -1       {0,1}   -   -
struct Routed {
    RolloutResult roll;
    SeqBatch batch;
    TrainForward train;

    Routed() {
        const std::vector<std::vector<int32_t>> seqs{{1, 5, 6, 7, 8, 2}, {1, 9, 10, 11}};
        const std::vector<int32_t> prompt_lens{3, 2};
        batch = make_seq_batch(seqs, prompt_lens);
        const std::vector<std::vector<int32_t>> ro{{0, 1, 2, 3, 4, 5, 0, 2, 1, 3, -1, -1}, {0, 1, 2, 3, 4, 5, -1, -1}};
        const std::vector<int32_t> tr{6, 7, 2, 3, 4, 5, 2, 0, 1, 6, 3, 4,   // seq0
                                      0, 1, 2, 7, 4, 5, 0, 1, 0, 0, 0, 0};  // seq1 (+ padding)
        for (size_t i = 0; i < seqs.size(); ++i) {
            RolloutSequence s;
            s.tokens = seqs[i];
            s.prompt_len = prompt_lens[i];
            s.lp_processed.assign(seqs[i].size() - prompt_lens[i], -1.0f);
            s.lp_raw = s.lp_processed;
            s.expert_ids = {ro[i]};
            roll.sequences.push_back(s);
        }
        train.logp.assign((size_t)batch.B * batch.T, -1.0f);
        train.entropy.assign(train.logp.size(), 0.5f);
        train.used_expert_ids = {tr};
        train.own_expert_ids = train.used_expert_ids;
    }
    RouterDiff diff() const {
        const TokenView tv = gather_tokens(roll, batch, train, LogprobSource::processed);
        return routing_diff(roll, batch, train, tv, 1, 2);
    }
};

TEST(RoutingDiff, CountsResponseTokensByThePositionThatPredictedThem) {
    Routed r;
    ASSERT_EQ(r.batch.T, 6);
    const RouterDiff d = r.diff();
    EXPECT_EQ(d.num_valid_tokens, 5u) << "3 + 2 response tokens, not the 10 positions the rollout routed";
    EXPECT_EQ(d.per_token_sum, (std::vector<int>{0, 0, 1, 1, 0}));
    EXPECT_DOUBLE_EQ(d.router_level, 2.0 / 5.0);
    EXPECT_DOUBLE_EQ(d.token_level, 2.0 / 5.0);
    EXPECT_DOUBLE_EQ(d.sequence_level, (1.0 / 3.0 + 1.0 / 2.0) / 2.0);
    EXPECT_EQ(d.histogram, (std::vector<uint64_t>{3, 2, 0})) << "the d = 2 flip at seq0 position 0 is not there";
}

TEST(RoutingDiff, AFlipAtAnEarlyPromptPositionIsNotCounted) {
    Routed r;
    const RouterDiff with_flip = r.diff();
    r.train.used_expert_ids[0][0] = 0, r.train.used_expert_ids[0][1] = 1;  // seq0 position 0 now agrees
    const RouterDiff without = r.diff();
    EXPECT_EQ(with_flip.router_level, without.router_level);
    EXPECT_EQ(with_flip.token_level, without.token_level);
    EXPECT_EQ(with_flip.histogram, without.histogram);
    // A flip at a position that predicts a response token does count.
    r.train.used_expert_ids[0][4] = 7;  // seq0 position 2 -> the response token at 3
    const RouterDiff more = r.diff();
    EXPECT_EQ(more.per_token_sum, (std::vector<int>{1, 0, 1, 1, 0}));
    EXPECT_DOUBLE_EQ(more.token_level, 3.0 / 5.0);
}

TEST(RoutingDiff, IdenticalRoutesGiveZero) {
    Routed r;
    for (size_t i = 0; i < r.roll.sequences.size(); ++i) {
        const auto& ids = r.roll.sequences[i].expert_ids[0];
        for (size_t j = 0; j < ids.size(); ++j)
            if (ids[j] >= 0) r.train.used_expert_ids[0][i * r.batch.T * 2 + j] = ids[j];
    }
    const RouterDiff d = r.diff();
    EXPECT_EQ(d.router_level, 0.0);
    EXPECT_EQ(d.token_level, 0.0);
    EXPECT_EQ(d.num_valid_tokens, 5u);
}

}  // namespace
