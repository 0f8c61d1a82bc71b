// The long-response tasks: scratchpad long addition and the multi-turn
// calculator (formats, rewards, the environment and its mask, held-out split).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "core/model/vocab.h"
#include "core/rl/tasks.h"
#include "tests/core/rl/task_fixtures.h"

using namespace mlk;
using namespace mlk::task_fixtures;

namespace {

std::string reply_text(const Task& t, const std::string& response) {
    return Vocab::decode(t.environment_reply(Prompt{}, enc(response)));
}

}  // namespace

TEST(LongTasks, LongAdditionScratchpadIsColumnArithmetic) {
    for (int n : {1, 3, 6, 8}) {
        auto t = make_task("long_addition", n);
        for (uint64_t i = 0; i < 300; ++i) {
            const Prompt p = t->sample(4, i);
            ASSERT_EQ(p.text.size(), (size_t)2 * n + 2);
            const std::string a = p.text.substr(0, n), b = p.text.substr(n + 1, n);
            ASSERT_EQ(p.text[n], '+');
            ASSERT_EQ(p.text.back(), '=');
            // Recompute the scratchpad from the operands, least significant column first.
            std::string want;
            int carry = 0;
            for (int c = n - 1; c >= 0; --c) {
                const int s = (a[c] - '0') + (b[c] - '0') + carry;
                want += std::string{
                    a[c], '+', b[c], '+', char('0' + carry), '=', char('0' + s / 10), char('0' + s % 10), ','};
                carry = s / 10;
            }
            std::string sum = std::to_string(std::stoull(a) + std::stoull(b));
            sum = std::string(n + 1 - sum.size(), '0') + sum;
            EXPECT_EQ(p.answer, want + "|" + sum) << p.text;
            EXPECT_EQ((int)p.answer_tokens.size(), t->max_answer_tokens());  // fixed width
        }
    }
}

TEST(LongTasks, CalculatorDemonstrationUsesTheTool) {
    auto t = make_task("calculator", 3);
    for (uint64_t i = 0; i < 300; ++i) {
        const Prompt p = t->sample(4, i);
        // "a*b+c*d+e*f=": the demonstration calls the tool once per product,
        // once for the sum, and answers with the value.
        ASSERT_EQ(p.text.back(), '=');
        int total = 0;
        std::string expect, sum_call = "c:";
        for (int j = 0; j < 3; ++j) {
            const std::string prod = p.text.substr(6 * j, 5);
            const int a = std::stoi(prod.substr(0, 2)), b = std::stoi(prod.substr(3, 2));
            ASSERT_EQ(prod[2], '*');
            EXPECT_GE(a, 10);
            EXPECT_LE(b, 99);
            expect += "c:" + prod + ";" + std::to_string(a * b) + ";";
            sum_call += (j ? "+" : "") + std::to_string(a * b);
            total += a * b;
        }
        EXPECT_EQ(p.answer, expect + sum_call + ";" + std::to_string(total) + ";|" + std::to_string(total));
        EXPECT_LE((int)p.answer_tokens.size(), t->max_answer_tokens());
    }
}

TEST(LongTasks, ResponsesAre50To200TokensAtLengths5To8) {
    for (const char* name : {"long_addition", "calculator"})
        for (int n = 5; n <= 8; ++n) {
            auto t = make_task(name, n);
            for (uint64_t i = 0; i < 100; ++i) {
                const size_t len = t->target(t->sample(1, i)).size();
                EXPECT_GE(len, 50u) << name << n;
                EXPECT_LE(len, 200u) << name << n;
            }
        }
    EXPECT_GE(make_task("calculator", 3)->target(make_task("calculator", 3)->sample(1, 0)).size(), 50u);
}

TEST(LongTasks, LongAdditionRewardsByHand) {
    auto t = make_task("long_addition", 3);
    const Prompt p = make_prompt("482+973=", "2+3+0=05,8+7+0=15,4+9+1=14,|1455");
    struct Case {
        std::string resp;
        bool eos;
        double exact, partial;
    };
    const std::vector<Case> cases = {
        {"2+3+0=05,8+7+0=15,4+9+1=14,|1455", true, 1, 1},
        {"2+3+0=05,8+7+0=15,4+9+1=14,|1445", true, 0, 3.0 / 4},           // wrong answer
        {"2+3+0=05,8+7+0=16,4+9+1=14,|1455", true, 0, 3.0 / 4},           // one wrong column
        {"2+3+0=05,8+7+0=15,4+9+1=14,|1455", false, 0, 3.0 / 4},          // no eos: cut by max_new_tokens
        {"2+3+0=05,8+7+", false, 0, 1.0 / 4},                             // truncated scratchpad
        {"2+3+0=05,8+7+0=15,", true, 0, 2.0 / 4},                         // stops before the last column
        {"2+3+0=05,8+7+0=15,4+9+1=14,|1455,", true, 0, 3.0 / 4},          // garbage after the answer
        {"2+3+0=05,8+7+0=15,4+9+1=14,0+0+1=01,|1455", true, 0, 3.0 / 4},  // an extra column
        {"abc;;x", true, 0, 0},                                           // garbage
        {"", true, 0, 0},
    };
    for (size_t i = 0; i < cases.size(); ++i) {
        const auto r = cases[i].eos ? with_eos(cases[i].resp) : enc(cases[i].resp);
        EXPECT_DOUBLE_EQ(t->reward(p, r, false), cases[i].exact) << "case " << i;
        EXPECT_DOUBLE_EQ(t->reward(p, r, true), cases[i].partial) << "case " << i;
    }
    // Tokens after eos do not count; a stray special token spoils its step.
    auto after = with_eos(p.answer);
    after.push_back(enc("7")[0]);
    EXPECT_EQ(t->reward(p, after, false), 1.0);
    auto stray = with_eos(p.answer);
    stray.insert(stray.begin(), Vocab::bos);
    EXPECT_DOUBLE_EQ(t->reward(p, stray, true), 3.0 / 4);
}

TEST(LongTasks, CalculatorRewardsByHand) {
    auto t = make_task("calculator", 2);
    const Prompt p = make_prompt("37*48+12*95=", "c:37*48;1776;c:12*95;1140;c:1776+1140;2916;|2916");
    struct Case {
        std::string resp;
        bool eos;
        double exact, partial;
    };
    // Steps: two product calls, the sum call, the answer followed by eos.
    const std::vector<Case> cases = {
        {"c:37*48;1776;c:12*95;1140;c:1776+1140;2916;|2916", true, 1, 1},
        {"c:37*48+12*95;2916;|2916", true, 1, 1},                                 // another route to the answer
        {"c:37*48;1776;c:12*95;1140;c:1776+1140;2916;|2917", true, 0, 3.0 / 4},   // miscopied answer
        {"c:37*48;1776;c:12*95;1140;c:1776+1140;2916;|2916", false, 0, 3.0 / 4},  // no eos
        {"c:37*48;1776;c:12*59;708;c:1776+708;2484;|2484", true, 0, 1.0 / 4},     // one wrong call
        {"c:37*48;1776;c:12", false, 0, 1.0 / 4},                                 // truncated
        {"c:37*48;1776;|2916|2916", true, 0, 1.0 / 4},                            // two answers
        {"2916", true, 0, 0},                                                     // no "|"
        {"zz::;;c", true, 0, 0},                                                  // garbage
        {"", false, 0, 0},
    };
    for (size_t i = 0; i < cases.size(); ++i) {
        const auto r = cases[i].eos ? with_eos(cases[i].resp) : enc(cases[i].resp);
        EXPECT_DOUBLE_EQ(t->reward(p, r, false), cases[i].exact) << "case " << i;
        EXPECT_DOUBLE_EQ(t->reward(p, r, true), cases[i].partial) << "case " << i;
    }
}

TEST(LongTasks, CalculatorEnvironmentRepliesToCompletedCalls) {
    auto t = make_task("calculator", 2);
    EXPECT_TRUE(t->multi_turn());
    EXPECT_FALSE(make_task("long_addition", 3)->multi_turn());
    EXPECT_EQ(reply_text(*t, "c:37*48;"), "1776;");
    EXPECT_EQ(reply_text(*t, "c:2+3*4-5*6;"), "-16;");  // multiplication first
    EXPECT_EQ(reply_text(*t, "c:1776+1140;"), "2916;");
    // Already answered: the reply follows the call, nothing is due.
    EXPECT_EQ(reply_text(*t, "c:37*48;1776;"), "");
    EXPECT_EQ(reply_text(*t, "c:37*48;1776;c:12*95;"), "1140;");
    // Not a call (yet), or malformed.
    EXPECT_EQ(reply_text(*t, "c:37*48"), "");
    EXPECT_EQ(reply_text(*t, "12;"), "");
    EXPECT_EQ(reply_text(*t, "xc:1*2;"), "");
    EXPECT_EQ(reply_text(*t, "c:37**48;"), "?;");
    EXPECT_EQ(reply_text(*t, "c:;"), "?;");
    EXPECT_EQ(reply_text(*t, "c:1234567890;"), "?;");                     // 10-digit operand
    EXPECT_EQ(reply_text(*t, "c:999999999*999999999*999999999;"), "?;");  // out of range
    // After the policy's eos the episode is over.
    auto done = enc("c:1*2;");
    done.insert(done.begin(), Vocab::eos);
    EXPECT_TRUE(t->environment_reply(Prompt{}, done).empty());
}

TEST(LongTasks, EnvironmentMaskMarksExactlyTheReplies) {
    auto t = make_task("calculator", 4);
    for (uint64_t i = 0; i < 50; ++i) {
        const Prompt p = t->sample(2, i);
        const auto tgt = t->target(p);
        const auto mask = t->environment_mask(p, tgt);
        ASSERT_EQ(mask.size(), tgt.size());
        // Each masked run starts right after a call's ";" and holds the value
        // of that call followed by ";".
        const std::string s = Vocab::decode(std::vector<int32_t>(tgt.begin(), tgt.end() - 1));
        std::string masked, expected;
        size_t runs = 0;
        for (size_t k = 0; k < s.size(); ++k) {
            if (mask[k]) masked += s[k];
            if (mask[k] && (k == 0 || !mask[k - 1])) {
                ++runs;
                ASSERT_EQ(s[k - 1], ';');
                const size_t call = s.rfind("c:", k - 1);
                ASSERT_NE(call, std::string::npos);
                expected += reply_text(*t, s.substr(0, k));
            }
        }
        EXPECT_EQ(runs, 5u);  // four products and the sum
        EXPECT_EQ(masked, expected);
        EXPECT_EQ(mask.back(), 0);  // eos is the policy's
        // A single-turn task has no environment tokens.
        auto la = make_task("long_addition", 3);
        const Prompt q = la->sample(2, i);
        for (uint8_t m : la->environment_mask(q, la->target(q))) EXPECT_EQ(m, 0);
    }
}

TEST(LongTasks, HeldOutSplitDisjointAtPresetLengths) {
    for (auto [name, len] : {std::pair{"long_addition", 6}, std::pair{"calculator", 3}}) {
        auto t = make_task(name, len);
        ASSERT_TRUE(t->eval_disjoint());
        std::set<std::string> train;
        for (uint64_t i = 0; i < 5000; ++i) train.insert(t->sample(1, i).text);
        for (const auto& p : t->eval_set(256)) {
            EXPECT_TRUE(p.eval);
            EXPECT_EQ(train.count(p.text), 0u) << name << " " << p.text;
        }
    }
}
