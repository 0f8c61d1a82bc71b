#include "core/config/model_builder.h"

#include <algorithm>
#include <stdexcept>

#include "core/config/config.h"

namespace mlk {

bool ModelConfig::is_moe_layer(int l) const {
    if (kind != ModelKind::moe || num_experts <= 0 || decoder_sparse_step <= 0) return false;
    if (std::find(mlp_only_layers.begin(), mlp_only_layers.end(), l) != mlp_only_layers.end()) return false;
    return (l + 1) % decoder_sparse_step == 0;
}

std::vector<int> ModelConfig::moe_layers() const {
    std::vector<int> out;
    for (int l = 0; l < num_layers; ++l)
        if (is_moe_layer(l)) out.push_back(l);
    return out;
}

std::string ModelConfig::preset_name() const { return std::string(kind == ModelKind::moe ? "moe-" : "dense-") + size; }

namespace {

// The six architectures. Tiny and small keep fixed dimensions, on which stored
// runs depend (pinned bit for bit by tests/core/rl/pinned_run_test);
// MoE presets untie the LM head, as Qwen3-MoE does. The deep MoE is deep and
// wide in experts as real MoEs are, so a route flipped in an early layer
// changes the input of every later router; its experts are narrow (64), so
// top-6 of 48 does about the work of dense-deep's MLP per token. A preset's
// intermediate_size is also the width of the dense layers an MoE model gets
// from model.mlp_only_layers / decoder_sparse_step.
struct PresetRow {
    const char* name;
    ModelKind kind;
    const char* size;
    int hidden, layers, heads, kv_heads, intermediate, experts, top_k, expert_width;
    bool tied;
};
constexpr ModelKind kDense = ModelKind::dense, kMoe = ModelKind::moe;
constexpr PresetRow kPresets[] = {
    {"dense-tiny", kDense, "tiny", 64, 2, 4, 2, 192, 0, 0, 0, true},
    {"moe-tiny", kMoe, "tiny", 64, 2, 4, 2, 192, 8, 2, 64, false},
    {"dense-small", kDense, "small", 128, 4, 8, 4, 384, 0, 0, 0, true},
    {"moe-small", kMoe, "small", 128, 4, 8, 4, 192, 16, 4, 96, false},
    {"dense-deep", kDense, "deep", 128, 12, 8, 4, 384, 0, 0, 0, true},
    {"moe-deep", kMoe, "deep", 128, 12, 8, 4, 384, 48, 6, 64, false},
};

}  // namespace

const std::vector<std::string>& model_preset_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> v;
        for (const PresetRow& p : kPresets) v.push_back(p.name);
        return v;
    }();
    return names;
}

ModelConfig preset_architecture(std::string_view name) {
    for (const PresetRow& p : kPresets) {
        if (name != p.name) continue;
        ModelConfig c;  // head_dim 16, 128 positions, RMSNorm eps and RoPE theta for all
        c.kind = p.kind;
        c.size = p.size;
        c.hidden_size = p.hidden;
        c.num_layers = p.layers;
        c.num_heads = p.heads;
        c.num_kv_heads = p.kv_heads;
        c.intermediate_size = p.intermediate;
        c.num_experts = p.experts;
        c.num_experts_per_tok = p.top_k;
        c.moe_intermediate_size = p.expert_width;
        c.tie_word_embeddings = p.tied;
        return c;
    }
    std::string allowed;
    for (const auto& n : model_preset_names()) allowed += (allowed.empty() ? "" : ", ") + n;
    throw std::invalid_argument("model preset '" + std::string(name) + "' is unknown; allowed: " + allowed);
}

ModelSettings preset_settings(std::string_view name) {
    const ModelConfig m = preset_architecture(name);
    ModelSettings s;
    s.kind = m.kind;
    s.size = *enum_from_name<ModelSize>(m.size);
    return s;
}

namespace {

// Equal in everything the model computes with; the vocabulary comes from
// elsewhere, and a width no layer uses does not count.
bool same_architecture(const ModelConfig& a, const ModelConfig& b) {
    const bool moe = a.kind == ModelKind::moe;
    auto has_dense_layer = [](const ModelConfig& m) { return m.num_moe_layers() < m.num_layers; };
    return a.kind == b.kind && a.hidden_size == b.hidden_size && a.num_layers == b.num_layers &&
           a.num_heads == b.num_heads && a.num_kv_heads == b.num_kv_heads && a.head_dim == b.head_dim &&
           (has_dense_layer(a) || has_dense_layer(b) ? a.intermediate_size == b.intermediate_size : true) &&
           a.num_experts == b.num_experts && a.num_experts_per_tok == b.num_experts_per_tok &&
           a.moe_intermediate_size == b.moe_intermediate_size &&
           (!moe || (a.decoder_sparse_step == b.decoder_sparse_step && a.mlp_only_layers == b.mlp_only_layers)) &&
           a.rms_norm_eps == b.rms_norm_eps && a.rope_theta == b.rope_theta &&
           a.max_position_embeddings == b.max_position_embeddings && a.tie_word_embeddings == b.tie_word_embeddings;
}

}  // namespace

std::string matching_preset_size(const ModelConfig& m) {
    for (const auto& size : enum_names<ModelSize>()) {
        const ModelConfig p = preset_architecture(std::string(enum_name(m.kind)) + "-" + size);
        if (same_architecture(p, m)) return size;
    }
    return "custom";
}

ModelConfig architecture_of(const ModelSettings& s) {
    ModelConfig m = preset_architecture(std::string(enum_name(s.kind)) + "-" + std::string(enum_name(s.size)));
    auto pick = [](int setting, int& field) {
        if (setting > 0) field = setting;
    };
    pick(s.hidden_size, m.hidden_size);
    pick(s.num_layers, m.num_layers);
    pick(s.num_heads, m.num_heads);
    pick(s.num_kv_heads, m.num_kv_heads);
    pick(s.head_dim, m.head_dim);
    pick(s.intermediate_size, m.intermediate_size);
    pick(s.max_position_embeddings, m.max_position_embeddings);
    if (s.tie_word_embeddings != TieEmbeddings::preset)
        m.tie_word_embeddings = s.tie_word_embeddings == TieEmbeddings::tied;
    if (m.kind == ModelKind::moe) {  // a dense model has no experts, whatever these say (model_warnings)
        pick(s.num_experts, m.num_experts);
        pick(s.num_experts_per_tok, m.num_experts_per_tok);
        pick(s.moe_intermediate_size, m.moe_intermediate_size);
        pick(s.decoder_sparse_step, m.decoder_sparse_step);
        m.mlp_only_layers = parse_layer_list(s.mlp_only_layers).value_or(std::vector<int>{});
    }
    m.size = matching_preset_size(m);
    return m;
}

std::string architecture_text(const ModelConfig& m) {
    auto n = [](int v) { return std::to_string(v); };
    std::string t = std::string(enum_name(m.kind)) + ", hidden " + n(m.hidden_size) + ", " + n(m.num_layers) +
                    " layers, " + n(m.num_heads) + " heads (" + n(m.num_kv_heads) + " kv) x " + n(m.head_dim);
    const int moe = m.num_moe_layers();
    if (moe > 0)
        t += ", " + n(m.num_experts) + " experts top-" + n(m.num_experts_per_tok) + " x " + n(m.moe_intermediate_size);
    if (moe < m.num_layers) {
        std::string dense;
        for (int l = 0; l < m.num_layers; ++l)
            if (!m.is_moe_layer(l)) dense += (dense.empty() ? "" : ",") + n(l);
        t += moe > 0 ? ", dense layers " + dense + " with MLP " + n(m.intermediate_size)
                     : ", MLP " + n(m.intermediate_size);
    }
    return t + (m.tie_word_embeddings ? ", tied head, " : ", untied head, ") + n(m.max_position_embeddings) +
           " positions";
}

int64_t parameter_count(const ModelConfig& m) {
    const int64_t D = m.hidden_size, hd = m.head_dim;
    const int64_t attention = D * m.num_heads * hd * 2 + D * m.num_kv_heads * hd * 2 + 2 * hd + 2 * D;
    const int64_t dense_mlp = 3 * D * m.intermediate_size;
    const int64_t moe = D * m.num_experts + int64_t{m.num_experts} * 3 * D * m.moe_intermediate_size;
    int64_t n = int64_t{m.vocab_size} * D + D + (m.tie_word_embeddings ? 0 : D * m.vocab_size);
    for (int l = 0; l < m.num_layers; ++l) n += attention + (m.is_moe_layer(l) ? moe : dense_mlp);
    return n;
}

std::vector<std::string> architecture_violations(const ModelConfig& m, bool hf) {
    // Each rule names the fields it reads, in the reader's spelling.
    auto key = [hf](const char* ours, const char* theirs) { return std::string(hf ? theirs : ours); };
    auto val = [](int64_t v) { return " (" + std::to_string(v) + ")"; };
    const std::string heads = key("model.num_heads", "num_attention_heads"),
                      kv_heads = key("model.num_kv_heads", "num_key_value_heads"),
                      layers = key("model.num_layers", "num_hidden_layers"),
                      only = key("model.mlp_only_layers", "mlp_only_layers"),
                      step = key("model.decoder_sparse_step", "decoder_sparse_step");
    std::vector<std::string> e;
    for (auto [v, k] : {std::pair{m.hidden_size, key("model.hidden_size", "hidden_size")},
                        {m.num_layers, layers},
                        {m.num_heads, heads},
                        {m.num_kv_heads, kv_heads},
                        {m.head_dim, key("model.head_dim", "head_dim")},
                        {m.max_position_embeddings, key("model.max_position_embeddings", "max_position_embeddings")}})
        if (v < 1) e.push_back(k + " must be at least 1" + val(v));
    if (m.num_heads > 0 && m.num_kv_heads > 0 && m.num_heads % m.num_kv_heads != 0)
        e.push_back(heads + val(m.num_heads) + " must be a multiple of " + kv_heads + val(m.num_kv_heads) +
                    ": each key/value head serves num_heads / num_kv_heads query heads");
    if (m.head_dim % 2 != 0)
        e.push_back(key("model.head_dim", "head_dim") + val(m.head_dim) +
                    " must be even: RoPE rotates pairs of dimensions");
    if (m.kind == ModelKind::moe) {
        const std::string experts = key("model.num_experts", "num_experts"),
                          topk = key("model.num_experts_per_tok", "num_experts_per_tok");
        if (m.num_experts < 1) e.push_back(experts + val(m.num_experts) + " must be at least 1 for an MoE model");
        if (m.num_experts_per_tok < 1 || m.num_experts_per_tok > m.num_experts)
            e.push_back(topk + val(m.num_experts_per_tok) + " must be between 1 and " + experts + val(m.num_experts));
        if (m.moe_intermediate_size < 1)
            e.push_back(key("model.moe_intermediate_size", "moe_intermediate_size") + val(m.moe_intermediate_size) +
                        " must be at least 1 for an MoE model");
        if (m.decoder_sparse_step < 1) e.push_back(step + val(m.decoder_sparse_step) + " must be at least 1");
        for (int l : m.mlp_only_layers)
            if (l < 0 || l >= m.num_layers)
                e.push_back(only + ": layer " + std::to_string(l) + " does not exist (" + layers + " is " +
                            std::to_string(m.num_layers) + ", so indices go from 0 to " +
                            std::to_string(m.num_layers - 1) + ")");
        if (m.num_experts >= 1 && m.decoder_sparse_step >= 1 && m.num_moe_layers() == 0)
            e.push_back((hf ? std::string("model_type qwen3_moe") : std::string("model.kind=moe")) +
                        " needs at least one MoE layer, but " + step + val(m.decoder_sparse_step) + " and " + only +
                        " \"" + layer_list_text(m.mlp_only_layers) + "\" make every one of the " +
                        std::to_string(m.num_layers) + " layers dense");
    }
    if (m.intermediate_size < 1 && m.num_moe_layers() < m.num_layers)
        e.push_back(key("model.intermediate_size", "intermediate_size") + val(m.intermediate_size) +
                    " must be at least 1: the model has dense layers");
    if (e.empty() && parameter_count(m) > kMaxParameters)
        e.push_back((hf ? std::string("the model")
                        : std::string("model.hidden_size / num_layers / intermediate_size / "
                                      "num_experts / moe_intermediate_size")) +
                    ": " + std::to_string(parameter_count(m)) + " parameters exceed the limit of " +
                    std::to_string(kMaxParameters) +
                    " (with gradients, AdamW moments and the engines' copies about 1.5 GB); make the model smaller");
    return e;
}

std::vector<std::string> model_rule_violations(const Config& c) {
    // A malformed list is the key's own check (validate() runs it for every
    // key); the rules below need the list.
    if (!parse_layer_list(c.model.mlp_only_layers)) return {};
    const ModelConfig m = architecture_of(c.model);
    std::vector<std::string> e = architecture_violations(m);
    // The longest sequence either engine sees: a prompt plus the rollout's
    // response, or plus the warm-up's answer and eos.
    const TaskBounds tb = task_bounds(c.task.name, c.task.length);
    const int tail = std::max(c.rollout.max_new_tokens, tb.answer_tokens + 1);
    const int longest = tb.prompt_tokens + tail;
    if (longest > m.max_position_embeddings)
        e.push_back("model.max_position_embeddings (" + std::to_string(m.max_position_embeddings) +
                    ") is shorter than the longest sequence, " + std::to_string(longest) + " tokens: a prompt of " +
                    std::to_string(tb.prompt_tokens) + " (task.name=" + std::string(enum_name(c.task.name)) +
                    ", task.length=" + std::to_string(c.task.length) + ") + " + std::to_string(tail) +
                    (c.rollout.max_new_tokens >= tb.answer_tokens + 1 ? " (rollout.max_new_tokens)"
                                                                      : " (the answer and eos of the warm-up)") +
                    "; set model.max_position_embeddings to at least " + std::to_string(longest) +
                    " or shorten the task");
    if (c.base.grow_from_layers > m.num_layers)
        e.push_back("base.grow_from_layers (" + std::to_string(c.base.grow_from_layers) +
                    ") must be at most model.num_layers (" + std::to_string(m.num_layers) +
                    "): the warm-up grows a shallow model into the full one; 0 = auto, " +
                    std::to_string(m.num_layers) + " = train the full model directly");
    return e;
}

int base_growth_layers(const Config& c) {
    const int layers = architecture_of(c.model).num_layers;
    int from = c.base.grow_from_layers;
    if (from == 0) from = layers >= kAutoGrowthMinLayers ? kAutoGrowthFromLayers : layers;
    return c.base.sft_steps > 0 && from < layers ? from : 0;
}

std::vector<std::string> model_warnings(const Config& c) {
    const ModelSettings& s = c.model;
    if (s.kind != ModelKind::dense) return {};
    std::vector<std::string> set;
    if (s.num_experts) set.push_back("model.num_experts");
    if (s.num_experts_per_tok) set.push_back("model.num_experts_per_tok");
    if (s.moe_intermediate_size) set.push_back("model.moe_intermediate_size");
    if (s.decoder_sparse_step) set.push_back("model.decoder_sparse_step");
    if (!s.mlp_only_layers.empty()) set.push_back("model.mlp_only_layers");
    if (set.empty()) return {};
    std::string keys;
    for (const auto& k : set) keys += (keys.empty() ? "" : ", ") + k;
    return {keys + " have no effect with model.kind=dense (every layer has a dense MLP)"};
}

std::optional<std::vector<int>> parse_layer_list(std::string_view text, std::string* error) {
    auto bad = [&](const std::string& why) -> std::optional<std::vector<int>> {
        if (error) *error = why;
        return std::nullopt;
    };
    const std::string form =
        "expected layer indices in ascending order separated by commas, no spaces (e.g. \"0,3\"; "
        "\"\" = none)";
    std::vector<int> out;
    if (text.empty()) return out;
    size_t i = 0;
    while (true) {
        const size_t b = i;
        while (i < text.size() && text[i] >= '0' && text[i] <= '9') ++i;
        const size_t len = i - b;
        if (len == 0 || len > 4 || (len > 1 && text[b] == '0'))
            return bad(form + ", got \"" + std::string(text.substr(0, 40)) + (text.size() > 40 ? "...\"" : "\""));
        const int v = std::stoi(std::string(text.substr(b, len)));
        if (!out.empty() && v <= out.back())
            return bad(form + ": " + std::to_string(v) +
                       (v == out.back() ? " is given twice" : " comes after a larger index"));
        out.push_back(v);
        if (i == text.size()) return out;
        if (text[i] != ',')
            return bad(form + ", got \"" + std::string(text.substr(0, 40)) + (text.size() > 40 ? "...\"" : "\""));
        ++i;
    }
}

std::string layer_list_text(const std::vector<int>& layers) {
    std::string s;
    for (int l : layers) s += (s.empty() ? "" : ",") + std::to_string(l);
    return s;
}

TaskBounds task_bounds(TaskName task, int length) {
    switch (task) {
        case TaskName::addition: return {1 + 2 * length + 2, length + 1};  // bos a + b =, a + b has one more digit
        case TaskName::sort: return {1 + length + 1, length};              // bos digits :
        case TaskName::reverse:
            return {1 + length + 1, length};  // bos letters |
        // bos a + b =, both zero-padded to `length` digits; one "a+b+c=ks," per
        // column, then "|" and the zero-padded sum of length + 1 digits.
        case TaskName::long_addition: return {1 + 2 * length + 2, 9 * length + 1 + length + 1};
        case TaskName::calculator: {
            // bos, `length` products of two-digit numbers "37*48" joined by "+", "=".
            // Response: per product "c:37*48;" and its reply of at most 4 digits
            // and ";", the sum call "c:" + products joined by "+" + ";", its reply
            // of D digits and ";", then "|" and D digits (D = digits of 9801 * length).
            int d = 1;
            for (int v = 9801 * length; v >= 10; v /= 10) ++d;
            return {1 + 5 * length + (length - 1) + 1, 13 * length + (2 + 5 * length) + (d + 1) + (1 + d)};
        }
    }
    return {};
}

}  // namespace mlk
