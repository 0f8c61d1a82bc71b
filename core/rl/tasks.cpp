#include "core/rl/tasks.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "core/config/model_builder.h"
#include "core/config/stable_hash.h"
#include "core/model/vocab.h"
#include "core/rl/long_tasks.h"

namespace mlk {

uint64_t splitmix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint64_t CounterRng::next() {
    state_ += 0x9e3779b97f4a7c15ull;
    uint64_t z = state_;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

uint64_t CounterRng::below(uint64_t n) {
    if (n <= 1) return 0;
    // Reject the top partial block so every residue is equally likely.
    const uint64_t limit = UINT64_MAX - (UINT64_MAX % n);
    uint64_t x;
    do x = next();
    while (x >= limit);
    return x % n;
}

namespace {

// The train/eval split of the problem space. Fixed forever: changing it would
// silently move prompts between the training stream and held-out sets.
constexpr uint64_t kEvalBuckets = 8;
constexpr double kMinSplitSpace = 100.0;
bool in_eval_part(std::string_view text) { return splitmix64(fnv1a(text)) % kEvalBuckets == 0; }

double pow_sat(double base, int exp) {
    double v = std::pow(base, exp);
    return std::min(v, 1e18);
}

uint64_t pow10u(int n) {
    uint64_t v = 1;
    for (int i = 0; i < n; ++i) v *= 10;
    return v;
}

class AdditionTask final : public Task {
public:
    explicit AdditionTask(int length) : Task(length) {}
    std::string name() const override { return "addition"; }
    std::string description() const override {
        return "Add two integers of up to " + std::to_string(length()) + " digits: \"12+7=\" -> \"19\"";
    }
    int max_prompt_tokens() const override { return task_bounds(TaskName::addition, length()).prompt_tokens; }
    int max_answer_tokens() const override { return task_bounds(TaskName::addition, length()).answer_tokens; }

protected:
    Problem generate(CounterRng& rng) const override {
        const uint64_t n = pow10u(length());
        const uint64_t a = rng.below(n), b = rng.below(n);
        return {std::to_string(a) + "+" + std::to_string(b) + "=", std::to_string(a + b)};
    }
    double space_size() const override { return pow_sat(10.0, 2 * length()); }
};

class SortTask final : public Task {
public:
    explicit SortTask(int length) : Task(length) {}
    std::string name() const override { return "sort"; }
    std::string description() const override {
        return "Sort " + std::to_string(length()) + " digits ascending: \"3120:\" -> \"0123\"";
    }
    int max_prompt_tokens() const override { return task_bounds(TaskName::sort, length()).prompt_tokens; }
    int max_answer_tokens() const override { return task_bounds(TaskName::sort, length()).answer_tokens; }

protected:
    Problem generate(CounterRng& rng) const override {
        std::string digits;
        for (int i = 0; i < length(); ++i) digits += static_cast<char>('0' + rng.below(10));
        std::string sorted = digits;
        std::sort(sorted.begin(), sorted.end());
        return {digits + ":", sorted};
    }
    double space_size() const override { return pow_sat(10.0, length()); }
};

class ReverseTask final : public Task {
public:
    explicit ReverseTask(int length) : Task(length) {}
    std::string name() const override { return "reverse"; }
    std::string description() const override {
        return "Reverse " + std::to_string(length()) + " letters: \"abc|\" -> \"cba\"";
    }
    int max_prompt_tokens() const override { return task_bounds(TaskName::reverse, length()).prompt_tokens; }
    int max_answer_tokens() const override { return task_bounds(TaskName::reverse, length()).answer_tokens; }

protected:
    Problem generate(CounterRng& rng) const override {
        std::string s;
        for (int i = 0; i < length(); ++i) s += static_cast<char>('a' + rng.below(26));
        return {s + "|", std::string(s.rbegin(), s.rend())};
    }
    double space_size() const override { return pow_sat(26.0, length()); }
};

}  // namespace

Task::Task(int length) : length_(length) {
    if (length < kMinLength || length > kMaxLength)
        throw std::invalid_argument("task length " + std::to_string(length) + " is outside [" +
                                    std::to_string(kMinLength) + ", " + std::to_string(kMaxLength) + "]");
}

bool Task::eval_disjoint() const { return space_size() >= kMinSplitSpace; }

Prompt Task::draw(uint64_t seed, uint64_t index, bool eval) const {
    // Key = hash of (task, length, stream, seed, index); attempt counts the
    // rejections of problems from the other side of the train/eval split.
    const uint64_t stream = splitmix64(fnv1a(name()) ^ (static_cast<uint64_t>(length_) << 1) ^ (eval ? 1ull : 0ull));
    const uint64_t base = splitmix64(splitmix64(stream ^ seed) ^ index);
    const bool split = eval_disjoint();
    for (uint64_t attempt = 0; attempt < 100000; ++attempt) {
        CounterRng rng(splitmix64(base + attempt));
        Problem p = generate(rng);
        if (split && in_eval_part(p.text) != eval) continue;
        Prompt out;
        out.task = name();
        out.seed = seed;
        out.index = index;
        out.eval = eval;
        out.tokens.push_back(Vocab::bos);
        auto enc = Vocab::encode(p.text);
        out.tokens.insert(out.tokens.end(), enc.begin(), enc.end());
        out.answer_tokens = Vocab::encode(p.answer);
        out.text = std::move(p.text);
        out.answer = std::move(p.answer);
        return out;
    }
    throw std::logic_error("task " + name() + ": no problem found on the requested side of the eval split");
}

Prompt Task::sample(uint64_t seed, uint64_t index) const { return draw(seed, index, false); }

std::vector<Prompt> Task::eval_set(size_t size, uint64_t seed) const {
    std::vector<Prompt> out;
    out.reserve(size);
    for (size_t i = 0; i < size; ++i) out.push_back(draw(seed, i, true));
    return out;
}

double score_response(const std::vector<int32_t>& answer, const std::vector<int32_t>& response, bool partial_credit) {
    const auto eos_it = std::find(response.begin(), response.end(), Vocab::eos);
    const size_t content = static_cast<size_t>(eos_it - response.begin());
    // Exact: content equals the answer, then eos or the end of the response.
    if (content == answer.size() && std::equal(answer.begin(), answer.end(), response.begin())) return 1.0;
    if (!partial_credit) return 0.0;
    const size_t denom = std::max(answer.size(), content);
    if (denom == 0) return 0.0;
    size_t right = 0;
    for (size_t i = 0; i < std::min(answer.size(), content); ++i)
        if (response[i] == answer[i]) ++right;
    return static_cast<double>(right) / static_cast<double>(denom);
}

double Task::reward(const Prompt& prompt, const std::vector<int32_t>& response_tokens, bool partial_credit) const {
    return score_response(prompt.answer_tokens, response_tokens, partial_credit);
}

std::vector<int32_t> Task::target(const Prompt& prompt) const {
    std::vector<int32_t> t = prompt.answer_tokens;
    t.push_back(Vocab::eos);
    return t;
}

std::vector<int32_t> Task::environment_reply(const Prompt&, std::span<const int32_t>) const { return {}; }

std::vector<uint8_t> Task::environment_mask(const Prompt& prompt, std::span<const int32_t> response) const {
    std::vector<uint8_t> mask(response.size(), 0);
    if (!multi_turn()) return mask;
    for (size_t t = 0; t < response.size(); ++t) {
        const std::vector<int32_t> reply = environment_reply(prompt, response.first(t + 1));
        // The rollout inserted the reply right after the policy's token t;
        // a response cut short may end inside it.
        for (size_t j = 0; j < reply.size() && t + 1 + j < response.size(); ++j) mask[t + 1 + j] = 1;
        t += reply.size();
    }
    return mask;
}

std::function<std::vector<int32_t>(int, std::span<const int32_t>)> task_environment(const Task& task,
                                                                                    std::vector<Prompt> prompts,
                                                                                    int samples_per_prompt) {
    if (!task.multi_turn()) return {};
    return [&task, prompts = std::move(prompts), samples_per_prompt](int seq, std::span<const int32_t> response) {
        return task.environment_reply(prompts.at((size_t)(seq / samples_per_prompt)), response);
    };
}

std::vector<std::string> task_names() { return {"addition", "sort", "reverse", "long_addition", "calculator"}; }

std::unique_ptr<Task> make_task(std::string_view name, int length) {
    if (name == "addition") return std::make_unique<AdditionTask>(length);
    if (name == "sort") return std::make_unique<SortTask>(length);
    if (name == "reverse") return std::make_unique<ReverseTask>(length);
    if (name == "long_addition") return make_long_addition_task(length);
    if (name == "calculator") return make_calculator_task(length);
    std::string allowed;
    for (const auto& n : task_names()) allowed += (allowed.empty() ? "" : ", ") + n;
    throw std::invalid_argument("unknown task '" + std::string(name) + "' (allowed: " + allowed + ")");
}

}  // namespace mlk
