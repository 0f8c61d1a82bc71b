// The character-level vocabulary shared by every task and model. Small on
// purpose: the LM head stays cheap and a token is a readable character.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mlk {

struct Vocab {
    // Special tokens first so their ids never move when characters are added.
    static constexpr int32_t pad = 0;
    static constexpr int32_t bos = 1;
    static constexpr int32_t eos = 2;
    static constexpr std::string_view chars = "0123456789abcdefghijklmnopqrstuvwxyz+-*=<>,:;|?. ";
    static constexpr int32_t first_char = 3;
    static constexpr int size() { return first_char + static_cast<int>(chars.size()); }

    // Throws std::invalid_argument naming the character when it is not in the vocabulary.
    static std::vector<int32_t> encode(std::string_view text);
    // Special tokens render as <pad>, <bos>, <eos>.
    static std::string decode(const std::vector<int32_t>& ids);
    static std::string token_text(int32_t id);
};

}  // namespace mlk
