#include "core/rl/tasks.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <stdexcept>
#include <string>

#include "core/model/vocab.h"
#include "tests/core/rl/task_fixtures.h"

using namespace mlk;
using namespace mlk::task_fixtures;

namespace {}  // namespace

TEST(Tasks, SplitmixReference) {
    // First output of the reference splitmix64 generator seeded with 0.
    EXPECT_EQ(splitmix64(0), 0xe220a8397b1dcdafull);
    CounterRng rng(0);
    EXPECT_EQ(rng.next(), 0xe220a8397b1dcdafull);
    EXPECT_EQ(rng.next(), 0x6e789e6aa1b965f4ull);
    CounterRng r2(42);
    for (int i = 0; i < 1000; ++i) EXPECT_LT(r2.below(7), 7u);
    EXPECT_EQ(r2.below(1), 0u);
}

TEST(Tasks, FactoryNamesAndErrors) {
    EXPECT_EQ(task_names(), (std::vector<std::string>{"addition", "sort", "reverse", "long_addition", "calculator"}));
    for (const auto& n : task_names()) {
        auto t = make_task(n, 3);
        EXPECT_EQ(t->name(), n);
        EXPECT_EQ(t->length(), 3);
        EXPECT_FALSE(t->description().empty());
    }
    try {
        make_task("multiply", 3);
        FAIL() << "no exception";
    } catch (const std::invalid_argument& e) {
        const std::string m = e.what();
        EXPECT_NE(m.find("multiply"), std::string::npos);
        EXPECT_NE(m.find("addition"), std::string::npos);
        EXPECT_NE(m.find("sort"), std::string::npos);
        EXPECT_NE(m.find("reverse"), std::string::npos);
        EXPECT_NE(m.find("calculator"), std::string::npos);
    }
    EXPECT_THROW(make_task("addition", 0), std::invalid_argument);
    EXPECT_THROW(make_task("sort", Task::kMaxLength + 1), std::invalid_argument);
    EXPECT_NO_THROW(make_task("reverse", Task::kMaxLength));
}

TEST(Tasks, DeterministicPerSeedAndIndex) {
    for (const auto& n : task_names()) {
        auto a = make_task(n, 4);
        auto b = make_task(n, 4);
        // Out-of-order and repeated calls give the same prompt.
        std::vector<Prompt> fwd;
        for (uint64_t i = 0; i < 200; ++i) fwd.push_back(a->sample(7, i));
        for (uint64_t i = 200; i-- > 0;) {
            Prompt p = b->sample(7, i);
            EXPECT_EQ(p.text, fwd[i].text);
            EXPECT_EQ(p.answer, fwd[i].answer);
            EXPECT_EQ(p.tokens, fwd[i].tokens);
            EXPECT_EQ(p.answer_tokens, fwd[i].answer_tokens);
            EXPECT_EQ(p.index, i);
            EXPECT_EQ(p.seed, 7u);
            EXPECT_FALSE(p.eval);
        }
        // Another seed gives another stream.
        int same = 0;
        for (uint64_t i = 0; i < 200; ++i) same += a->sample(8, i).text == fwd[i].text;
        EXPECT_LT(same, 10) << n;
        // Prompts vary along the stream.
        std::set<std::string> distinct;
        for (const auto& p : fwd) distinct.insert(p.text);
        EXPECT_GT(distinct.size(), 150u) << n;
    }
}

TEST(Tasks, FormatsAndAnswers) {
    auto add = make_task("addition", 3);
    for (uint64_t i = 0; i < 500; ++i) {
        Prompt p = add->sample(1, i);
        const auto plus = p.text.find('+');
        ASSERT_NE(plus, std::string::npos);
        ASSERT_EQ(p.text.back(), '=');
        const long a = std::stol(p.text.substr(0, plus));
        const long b = std::stol(p.text.substr(plus + 1, p.text.size() - plus - 2));
        EXPECT_LT(a, 1000);
        EXPECT_LT(b, 1000);
        EXPECT_EQ(p.answer, std::to_string(a + b));
        EXPECT_EQ(p.text, std::to_string(a) + "+" + std::to_string(b) + "=");  // no leading zeros
    }
    auto srt = make_task("sort", 5);
    for (uint64_t i = 0; i < 500; ++i) {
        Prompt p = srt->sample(1, i);
        ASSERT_EQ(p.text.size(), 6u);
        EXPECT_EQ(p.text.back(), ':');
        std::string d = p.text.substr(0, 5);
        EXPECT_TRUE(std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '9'; }));
        std::sort(d.begin(), d.end());
        EXPECT_EQ(p.answer, d);
    }
    auto rev = make_task("reverse", 6);
    for (uint64_t i = 0; i < 500; ++i) {
        Prompt p = rev->sample(1, i);
        ASSERT_EQ(p.text.size(), 7u);
        EXPECT_EQ(p.text.back(), '|');
        std::string s = p.text.substr(0, 6);
        EXPECT_TRUE(std::all_of(s.begin(), s.end(), [](char c) { return c >= 'a' && c <= 'z'; }));
        EXPECT_EQ(p.answer, std::string(s.rbegin(), s.rend()));
    }
}

TEST(Tasks, EveryPromptEncodable) {
    for (const auto& n : task_names())
        for (int len = 1; len <= Task::kMaxLength; ++len) {
            auto t = make_task(n, len);
            auto check = [&](const Prompt& p) {
                ASSERT_FALSE(p.tokens.empty());
                EXPECT_EQ(p.tokens[0], Vocab::bos);
                for (size_t k = 1; k < p.tokens.size(); ++k) {
                    EXPECT_GE(p.tokens[k], Vocab::first_char);
                    EXPECT_LT(p.tokens[k], Vocab::size());
                }
                EXPECT_EQ(Vocab::decode(p.tokens), "<bos>" + p.text);
                EXPECT_EQ(Vocab::decode(p.answer_tokens), p.answer);
                EXPECT_EQ(p.task, n);
                EXPECT_LE(static_cast<int>(p.tokens.size()), t->max_prompt_tokens());
                EXPECT_LE(static_cast<int>(p.answer_tokens.size()), t->max_answer_tokens());
                EXPECT_FALSE(p.answer.empty());
            };
            for (uint64_t i = 0; i < 300; ++i) check(t->sample(3, i));
            for (const auto& p : t->eval_set(50)) check(p);
        }
}

TEST(Tasks, LengthLimits) {
    for (const std::string n : {"addition", "sort", "reverse"})
        for (int len = 1; len <= 8; ++len) {
            auto t = make_task(n, len);
            EXPECT_LT(t->max_total_tokens(), 40) << n << " " << len;
        }
    // The bounds are tight: the largest addition reaches them.
    auto add = make_task("addition", 8);
    Prompt worst = make_prompt("99999999+99999999=", "199999998");
    EXPECT_EQ(static_cast<int>(worst.tokens.size()), add->max_prompt_tokens());
    EXPECT_EQ(static_cast<int>(worst.answer_tokens.size()), add->max_answer_tokens());
    EXPECT_EQ(add->max_total_tokens(), 1 + 18 + 9 + 1);
    EXPECT_EQ(make_task("sort", 8)->max_total_tokens(), 1 + 9 + 8 + 1);
    EXPECT_EQ(make_task("reverse", 8)->max_total_tokens(), 1 + 9 + 8 + 1);
}

TEST(Tasks, EvalSetDisjointFromTraining) {
    for (const auto& n : task_names())
        for (int len = 1; len <= 4; ++len) {
            auto t = make_task(n, len);
            const bool small = (n == "sort" || n == "reverse") && len == 1;
            EXPECT_EQ(t->eval_disjoint(), !small) << n << len;
            auto eval = t->eval_set(200);
            ASSERT_EQ(eval.size(), 200u);
            for (const auto& p : eval) EXPECT_TRUE(p.eval);
            // Prefix property: a shorter set is the start of a longer one.
            auto shorter = t->eval_set(20);
            for (size_t i = 0; i < shorter.size(); ++i) EXPECT_EQ(shorter[i].text, eval[i].text);
            // Same default eval set for every task instance.
            EXPECT_EQ(make_task(n, len)->eval_set(5)[4].text, eval[4].text);
            if (small) continue;
            std::set<std::string> train;
            for (uint64_t seed : {0ull, 1ull, 12345ull})
                for (uint64_t i = 0; i < 3000; ++i) train.insert(t->sample(seed, i).text);
            for (const auto& p : eval) EXPECT_EQ(train.count(p.text), 0u) << n << len << " " << p.text;
            // Another eval seed is also held out.
            for (const auto& p : t->eval_set(50, 99)) EXPECT_EQ(train.count(p.text), 0u);
        }
}

TEST(Tasks, RewardsByHand) {
    auto add = make_task("addition", 2);
    Prompt p = make_prompt("12+7=", "19");
    const auto one = enc("1"), nine = enc("9");
    const int32_t t1 = one[0], t9 = nine[0], t8 = enc("8")[0], t5 = enc("5")[0];
    const int32_t E = Vocab::eos;
    struct Case {
        std::vector<int32_t> resp;
        double exact, partial;
    };
    const std::vector<Case> cases = {
        {{t1, t9, E}, 1, 1},              // exact
        {{t1, t9}, 1, 1},                 // ran out of tokens right after the answer
        {{t1, t9, E, t5, t5}, 1, 1},      // tokens after eos are ignored
        {{t1, t8, E}, 0, 0.5},            // one of two digits right
        {{t1, E}, 0, 0.5},                // too short: 1 right / max(2, 1)
        {{t1, t9, t9, E}, 0, 2.0 / 3},    // too long: 2 right / max(2, 3)
        {{t1, t9, t5}, 0, 2.0 / 3},       // no eos and an extra digit
        {{t9, t1, E}, 0, 0},              // right digits, wrong positions
        {{E}, 0, 0},                      // empty answer
        {{}, 0, 0},                       // no tokens at all
        {{Vocab::bos, t1, t9, E}, 0, 0},  // shifted by a stray token
        {{Vocab::pad, t9, E}, 0, 0.5},
    };
    for (size_t i = 0; i < cases.size(); ++i) {
        EXPECT_DOUBLE_EQ(add->reward(p, cases[i].resp, false), cases[i].exact) << "case " << i;
        EXPECT_DOUBLE_EQ(add->reward(p, cases[i].resp, true), cases[i].partial) << "case " << i;
    }
    // Sort and reverse use the same rule.
    Prompt s = make_prompt("3120:", "0123");
    auto srt = make_task("sort", 4);
    EXPECT_EQ(srt->reward(s, with_eos(enc("0123")), false), 1.0);
    EXPECT_EQ(srt->reward(s, with_eos(enc("0132")), true), 0.5);
    EXPECT_EQ(srt->reward(s, with_eos(enc("0132")), false), 0.0);
    Prompt r = make_prompt("abc|", "cba");
    auto rev = make_task("reverse", 3);
    EXPECT_EQ(rev->reward(r, with_eos(enc("cba")), false), 1.0);
    EXPECT_DOUBLE_EQ(rev->reward(r, with_eos(enc("cbb")), true), 2.0 / 3);
    EXPECT_DOUBLE_EQ(rev->reward(r, with_eos(enc("abc")), true), 1.0 / 3);
}

TEST(Tasks, TargetIsAnswerThenEosAndEarnsFullReward) {
    for (const auto& n : task_names()) {
        auto t = make_task(n, 5);
        for (uint64_t i = 0; i < 100; ++i) {
            Prompt p = t->sample(11, i);
            auto tgt = t->target(p);
            ASSERT_EQ(tgt.size(), p.answer_tokens.size() + 1);
            EXPECT_EQ(tgt.back(), Vocab::eos);
            EXPECT_TRUE(std::equal(p.answer_tokens.begin(), p.answer_tokens.end(), tgt.begin()));
            EXPECT_EQ(t->reward(p, tgt, false), 1.0);
            EXPECT_EQ(t->reward(p, tgt, true), 1.0);
            // Partial credit is 1 only for an exact answer (the last answer
            // token: a calculator's route to its answer is free).
            auto wrong = tgt;
            int32_t& last = wrong[wrong.size() - 2];
            last = last == Vocab::first_char ? Vocab::first_char + 1 : Vocab::first_char;
            EXPECT_LT(t->reward(p, wrong, true), 1.0);
            EXPECT_EQ(t->reward(p, wrong, false), 0.0);
        }
    }
}
