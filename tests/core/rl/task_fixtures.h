// Hand-made prompts and responses for the task tests.
#pragma once

#include <string>
#include <vector>

#include "core/model/vocab.h"
#include "core/rl/tasks.h"

namespace mlk::task_fixtures {

inline std::vector<int32_t> enc(const std::string& s) { return Vocab::encode(s); }

inline std::vector<int32_t> with_eos(std::vector<int32_t> v) {
    v.push_back(Vocab::eos);
    return v;
}
inline std::vector<int32_t> with_eos(const std::string& s) { return with_eos(enc(s)); }

// A prompt as a task would make it, from its text and reference answer.
inline Prompt make_prompt(const std::string& text, const std::string& answer) {
    Prompt p;
    p.text = text;
    p.answer = answer;
    p.tokens = {Vocab::bos};
    auto t = enc(text);
    p.tokens.insert(p.tokens.end(), t.begin(), t.end());
    p.answer_tokens = enc(answer);
    return p;
}

}  // namespace mlk::task_fixtures
