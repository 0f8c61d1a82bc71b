#include "core/rl/long_tasks.h"

#include <algorithm>
#include <cmath>
#include <string_view>

#include "core/config/model_builder.h"
#include "core/model/vocab.h"

namespace mlk {

namespace {

// The characters of a response up to its first eos; a special token becomes
// '#', which is no vocabulary character, so it never matches a reference.
struct Content {
    std::string text;
    bool has_eos = false;
};
Content content_of(std::span<const int32_t> tokens) {
    Content c;
    for (int32_t t : tokens) {
        if (t == Vocab::eos) {
            c.has_eos = true;
            break;
        }
        const int ch = t - Vocab::first_char;
        c.text += ch >= 0 && ch < (int)Vocab::chars.size() ? Vocab::chars[ch] : '#';
    }
    return c;
}

std::vector<std::string_view> split(std::string_view s, char sep) {
    std::vector<std::string_view> out;
    size_t b = 0;
    for (size_t i = 0; i <= s.size(); ++i)
        if (i == s.size() || s[i] == sep) {
            out.push_back(s.substr(b, i - b));
            b = i + 1;
        }
    return out;
}

std::string zero_pad(uint64_t v, int width) {
    std::string s = std::to_string(v);
    return std::string(width > (int)s.size() ? width - s.size() : 0, '0') + s;
}

double capped_pow(double base, int exp) { return std::min(std::pow(base, exp), 1e18); }

// Steps right out of `steps`; 1.0 only when exact (see tasks.h).
double step_credit(bool exact, int right, int steps, bool partial_credit) {
    if (exact) return 1.0;
    if (!partial_credit || steps == 0) return 0.0;
    return std::min((double)right, (double)steps - 1) / (double)steps;
}

class LongAdditionTask final : public Task {
public:
    explicit LongAdditionTask(int length) : Task(length) {}
    std::string name() const override { return "long_addition"; }
    std::string description() const override {
        return "Add two " + std::to_string(length()) +
               "-digit numbers column by column: \"482+973=\" -> \"2+3+0=05,8+7+0=15,4+9+1=14,|1455\"";
    }
    int max_prompt_tokens() const override { return task_bounds(TaskName::long_addition, length()).prompt_tokens; }
    int max_answer_tokens() const override { return task_bounds(TaskName::long_addition, length()).answer_tokens; }

    // Steps: one per column, each "a+b+c=ks" followed by its comma, and the
    // final "|sum" followed by eos.
    double reward(const Prompt& prompt, const std::vector<int32_t>& response, bool partial_credit) const override {
        const Content c = content_of(response);
        const bool exact = c.has_eos && c.text == prompt.answer;
        const auto want = split(prompt.answer, ','), got = split(c.text, ',');
        const int n = length();
        int right = 0;
        for (int i = 0; i < n; ++i)
            if (i + 1 < (int)got.size() && got[i] == want[i]) ++right;
        if ((int)got.size() == n + 1 && got[n] == want[n] && c.has_eos) ++right;
        return step_credit(exact, right, n + 1, partial_credit);
    }

protected:
    Problem generate(CounterRng& rng) const override {
        uint64_t lim = 1;
        for (int i = 0; i < length(); ++i) lim *= 10;
        const uint64_t a = rng.below(lim), b = rng.below(lim);
        const std::string sa = zero_pad(a, length()), sb = zero_pad(b, length());
        std::string pad;
        int carry = 0;
        for (int i = length() - 1; i >= 0; --i) {
            const int da = sa[i] - '0', db = sb[i] - '0', s = da + db + carry;
            pad += std::to_string(da) + "+" + std::to_string(db) + "+" + std::to_string(carry) + "=" +
                   std::to_string(s / 10) + std::to_string(s % 10) + ",";
            carry = s / 10;
        }
        return {sa + "+" + sb + "=", pad + "|" + zero_pad(a + b, length() + 1)};
    }
    double space_size() const override { return capped_pow(10.0, 2 * length()); }
};

// The calculator tool: "<expr>" of non-negative integers joined by + - *,
// multiplication first. The reply is "<value>;" or "?;" when the expression
// is malformed or leaves the range a 15-digit value covers.
std::string calculator_reply(std::string_view expr) {
    constexpr int64_t kLimit = 1'000'000'000'000'000;
    const std::string bad = "?;";
    int64_t total = 0, term = 0, num = 0;
    int sign = 1, digits = 0;
    char op = '+';
    for (size_t i = 0; i <= expr.size(); ++i) {
        const char ch = i < expr.size() ? expr[i] : '\0';
        if (ch >= '0' && ch <= '9') {
            if (++digits > 9) return bad;
            num = num * 10 + (ch - '0');
            continue;
        }
        if (digits == 0 || (ch != '\0' && ch != '+' && ch != '-' && ch != '*')) return bad;
        if (op == '*') {
            if (num != 0 && std::abs(term) > kLimit / num) return bad;
            term *= num;
        } else {
            total += sign * term;
            sign = op == '-' ? -1 : 1;
            term = num;
        }
        if (std::abs(total) > kLimit) return bad;
        op = ch;
        num = 0;
        digits = 0;
    }
    total += sign * term;
    if (std::abs(total) > kLimit) return bad;
    return std::to_string(total) + ";";
}

// The policy's tool calls in a response, each "c:<expr>;" right after the
// start, a ";" or a reply, and the replies the environment inserted after
// them. `pending` is the reply due now: a call ends the response.
struct ToolTrace {
    std::vector<std::string> calls;  // "c:<expr>;"
    std::string pending;
};
ToolTrace trace_tools(std::string_view s) {
    ToolTrace tr;
    size_t seg = 0, pos = 0;
    while (pos < s.size()) {
        if (s[pos] != ';') {
            ++pos;
            continue;
        }
        const std::string_view piece = s.substr(seg, pos + 1 - seg);
        if (piece.size() >= 3 && piece.substr(0, 2) == "c:") {
            const std::string reply = calculator_reply(piece.substr(2, piece.size() - 3));
            tr.calls.emplace_back(piece);
            if (pos + 1 == s.size()) {
                tr.pending = reply;
                break;
            }
            pos += 1 + reply.size();
        } else {
            ++pos;
        }
        seg = pos;
    }
    return tr;
}

class CalculatorTask final : public Task {
public:
    explicit CalculatorTask(int length) : Task(length) {}
    std::string name() const override { return "calculator"; }
    std::string description() const override {
        return "Sum " + std::to_string(length()) +
               " products with a calculator tool whose replies the environment inserts: \"37*48+12*95=\" -> "
               "\"c:37*48;1776;c:12*95;1140;c:1776+1140;2916;|2916\"";
    }
    int max_prompt_tokens() const override { return task_bounds(TaskName::calculator, length()).prompt_tokens; }
    int max_answer_tokens() const override { return task_bounds(TaskName::calculator, length()).answer_tokens; }
    bool multi_turn() const override { return true; }

    std::vector<int32_t> environment_reply(const Prompt&, std::span<const int32_t> response) const override {
        const Content c = content_of(response);
        if (c.has_eos) return {};
        return Vocab::encode(trace_tools(c.text).pending);
    }

    // Steps: the reference calls in order (one per product, then the sum),
    // and the final "|value" followed by eos.
    double reward(const Prompt& prompt, const std::vector<int32_t>& response, bool partial_credit) const override {
        const Content c = content_of(response);
        const std::string_view ref = prompt.answer;
        const std::string_view final_answer = ref.substr(ref.rfind('|'));
        const bool answered =
            c.text.size() >= final_answer.size() &&
            c.text.compare(c.text.size() - final_answer.size(), std::string::npos, final_answer) == 0 &&
            std::count(c.text.begin(), c.text.end(), '|') == 1;
        const bool exact = answered && c.has_eos;
        if (exact || !partial_credit) return exact ? 1.0 : 0.0;
        const std::vector<std::string> want = trace_tools(ref).calls, got = trace_tools(c.text).calls;
        int right = 0;
        for (size_t j = 0; j < want.size(); ++j)
            if (j < got.size() && got[j] == want[j]) ++right;
        return step_credit(false, right, (int)want.size() + 1, true);
    }

protected:
    Problem generate(CounterRng& rng) const override {
        std::string text, resp, sum_call = "c:";
        int64_t total = 0;
        for (int j = 0; j < length(); ++j) {
            const int a = 10 + (int)rng.below(90), b = 10 + (int)rng.below(90);
            const std::string prod = std::to_string(a) + "*" + std::to_string(b);
            text += (j ? "+" : "") + prod;
            resp += "c:" + prod + ";" + std::to_string(a * b) + ";";
            sum_call += (j ? "+" : "") + std::to_string(a * b);
            total += a * b;
        }
        resp += sum_call + ";" + std::to_string(total) + ";|" + std::to_string(total);
        return {text + "=", resp};
    }
    double space_size() const override { return capped_pow(90.0, 2 * length()); }
};

}  // namespace

std::unique_ptr<Task> make_long_addition_task(int length) { return std::make_unique<LongAdditionTask>(length); }
std::unique_ptr<Task> make_calculator_task(int length) { return std::make_unique<CalculatorTask>(length); }

}  // namespace mlk
