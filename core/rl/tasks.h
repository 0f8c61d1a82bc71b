// Verifiable-reward tasks over the character vocabulary (core/model/vocab.h).
//
// Every task turns (seed, index) into one prompt with a unique reference
// answer, deterministically and without global state: the random stream of a
// prompt is a splitmix64 counter keyed by (task, length, seed, index), so
// sample(seed, i) is the same on every machine, thread and call order.
//
// Formats (one character = one token; the prompt starts with Vocab::bos):
//   addition  "12+7="    -> "19"       length = max digits per operand; operands
//                                       uniform in [0, 10^length), no leading zeros
//   sort      "3120:"    -> "0123"     length = number of digits; digits 0-9,
//                                       repeats allowed, answer ascending
//   reverse   "abc|"     -> "cba"      length = number of letters a-z
//
// Long-response tasks (core/rl/long_tasks.cpp), 50-200 response tokens at
// lengths 5-8, so mismatch can accumulate along a sequence:
//   long_addition "482+973=" -> "2+3+0=05,8+7+0=15,4+9+1=14,|1455"
//       length = digits per operand; operands zero-padded to `length`
//       digits; one scratchpad step "a+b+c=ks," per column from the least
//       significant (digits, carry in, carry out k and sum digit s), then "|"
//       and the sum zero-padded to length + 1 digits.
//   calculator "37*48+12*95=" -> "c:37*48;1776;c:12*95;1140;c:1776+1140;2916;|2916"
//       length = number of products of two-digit numbers. Multi-turn: each
//       call "c:<expr>;" the policy writes is answered by the ENVIRONMENT,
//       which inserts "<value>;" (or "?;" for a malformed expression); the
//       policy then goes on. Replies are context, not actions: the rollout
//       forces them (environment_reply) and every loss and metric skips them.
//   Reward: the response up to its first eos; exact 1.0 only with the eos
//   (these responses have a defined end, so one cut short by
//   max_new_tokens is not exact). Partial credit = steps right / steps, each
//   step one scratchpad column (long_addition) or one reference tool call
//   in order (calculator), plus the final answer followed by eos. A
//   calculator answer that is right and followed by eos is exact whatever
//   calls led to it (the route is the policy's).
//
// Held-out evaluation: the problem space of a task is split by a fixed hash of
// the prompt text into a training part (7/8) and an evaluation part (1/8).
// sample() only returns training problems, eval_set() only evaluation
// problems, so the two never share a prompt, for any seed and any index. When
// the whole space is too small to split (fewer than 100 distinct prompts:
// sort/reverse with length 1) both draw from the whole space and
// eval_disjoint() returns false.
//
// Reward (reward()): the response is read up to its first Vocab::eos (tokens
// after it are ignored). Exact credit 1.0 when the tokens before eos equal the
// answer and an eos follows, or when the response ends right after the answer
// with no eos (the rollout ran out of tokens: the answer is complete and
// nothing wrong was said). Otherwise 0.0, or with partial_credit:
//   (# positions i < |answer| with response[i] == answer[i]) / max(|answer|, |content|)
// where content = the response tokens before the first eos (or all of them).
// Extra characters thus cost credit, missing ones too; partial credit is < 1
// for every non-exact response and equals 1 exactly when reward is exact.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mlk {

struct Prompt {
    std::string task;  // task name
    uint64_t seed = 0;
    uint64_t index = 0;
    bool eval = false;   // drawn by eval_set()
    std::string text;    // prompt text without bos, e.g. "12+7="
    std::string answer;  // reference response text, e.g. "19" (long tasks: the whole scratchpad / tool dialogue)
    std::vector<int32_t> tokens;         // Vocab::bos followed by encode(text)
    std::vector<int32_t> answer_tokens;  // encode(answer), no eos
};

// splitmix64 finaliser and a counter-based generator built on it.
uint64_t splitmix64(uint64_t x);

class CounterRng {
public:
    explicit CounterRng(uint64_t key) : state_(key) {}
    uint64_t next();
    // Uniform integer in [0, n), n >= 1, unbiased (rejection).
    uint64_t below(uint64_t n);

private:
    uint64_t state_;
};

class Task {
public:
    static constexpr int kMinLength = 1;
    static constexpr int kMaxLength = 16;
    // Seed of the evaluation stream when none is given: the same eval set for
    // every run of a (task, length), so runs are comparable.
    static constexpr uint64_t kEvalSeed = 0x6576616c73657421ull;

    virtual ~Task() = default;

    virtual std::string name() const = 0;
    virtual std::string description() const = 0;
    int length() const { return length_; }

    // One training prompt; deterministic per (seed, index).
    Prompt sample(uint64_t seed, uint64_t index) const;
    // `size` evaluation prompts: eval_set(n)[i] depends only on (seed, i), so a
    // longer set extends a shorter one. May repeat prompts when the evaluation
    // part of the space is small.
    std::vector<Prompt> eval_set(size_t size, uint64_t seed = kEvalSeed) const;
    bool eval_disjoint() const;

    virtual double reward(const Prompt& prompt, const std::vector<int32_t>& response_tokens,
                          bool partial_credit = false) const;
    // Supervised warm-up target: answer tokens followed by Vocab::eos. For a
    // multi-turn task the answer holds the environment's replies too.
    std::vector<int32_t> target(const Prompt& prompt) const;

    // Multi-turn tasks: the tokens the environment inserts now, given the
    // response so far ending with a token the policy just sampled (empty:
    // none, the policy goes on). The reply never holds eos and depends on
    // the response only, so a rollout and a replay over the same tokens agree.
    virtual std::vector<int32_t> environment_reply(const Prompt& prompt, std::span<const int32_t> response) const;
    virtual bool multi_turn() const { return false; }
    // Per response token, 1 where the environment wrote it: replays
    // environment_reply over the response, as the rollout inserted it.
    std::vector<uint8_t> environment_mask(const Prompt& prompt, std::span<const int32_t> response) const;

    // Upper bounds over all prompts of this task and length.
    virtual int max_prompt_tokens() const = 0;  // including bos
    virtual int max_answer_tokens() const = 0;  // excluding eos
    int max_total_tokens() const { return max_prompt_tokens() + max_answer_tokens() + 1; }

protected:
    explicit Task(int length);

    struct Problem {
        std::string text;
        std::string answer;
    };
    virtual Problem generate(CounterRng& rng) const = 0;
    // Number of distinct prompt texts (saturates at 1e18).
    virtual double space_size() const = 0;

private:
    Prompt draw(uint64_t seed, uint64_t index, bool eval) const;
    int length_;
};

// Allowed names: task_names(). Throws std::invalid_argument
// naming the allowed names (or the allowed length range).
std::unique_ptr<Task> make_task(std::string_view name, int length);
std::vector<std::string> task_names();

// The rollout environment (core/engines/rollout_engine.h, Environment) of a
// batch whose sequence i answers prompts[i / samples_per_prompt]; empty for a
// single-turn task, so its rollout never calls one. `task` must outlive it.
std::function<std::vector<int32_t>(int, std::span<const int32_t>)> task_environment(const Task& task,
                                                                                    std::vector<Prompt> prompts,
                                                                                    int samples_per_prompt);

// Exact-match helper shared by tasks and tests: see the header comment.
double score_response(const std::vector<int32_t>& answer_tokens, const std::vector<int32_t>& response_tokens,
                      bool partial_credit);

}  // namespace mlk
