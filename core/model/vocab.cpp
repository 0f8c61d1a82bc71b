#include "core/model/vocab.h"

#include <stdexcept>

namespace mlk {

std::vector<int32_t> Vocab::encode(std::string_view text) {
    std::vector<int32_t> ids;
    ids.reserve(text.size());
    for (char c : text) {
        auto p = chars.find(c);
        if (p == std::string_view::npos)
            throw std::invalid_argument(std::string("character '") + c + "' is not in the vocabulary");
        ids.push_back(first_char + static_cast<int32_t>(p));
    }
    return ids;
}

std::string Vocab::token_text(int32_t id) {
    if (id == pad) return "<pad>";
    if (id == bos) return "<bos>";
    if (id == eos) return "<eos>";
    if (id >= first_char && id < size()) return std::string(1, chars[id - first_char]);
    return "<unk>";
}

std::string Vocab::decode(const std::vector<int32_t>& ids) {
    std::string s;
    for (int32_t id : ids) s += token_text(id);
    return s;
}

}  // namespace mlk
