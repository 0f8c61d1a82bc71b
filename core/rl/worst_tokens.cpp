#include "core/rl/worst_tokens.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "core/engines/numerics.h"
#include "core/model/vocab.h"
#include "core/rl/measure.h"

namespace mlk {

std::vector<size_t> worst_token_indices(const Measurement& m, int K) {
    const TokenView& tv = m.tokens;
    // NaN compares as +inf: a token whose mismatch is not even a number is
    // the first one to explain.
    const auto gap = [&](size_t i) {
        const double d = std::abs((double)tv.lp_train[i] - (double)tv.lp_roll[i]);
        return std::isnan(d) ? std::numeric_limits<double>::infinity() : d;
    };
    std::vector<size_t> idx;
    for (size_t i = 0; i < tv.valid.size(); ++i)
        if (tv.valid[i]) idx.push_back(i);  // tool output is context, not the policy's mismatch
    const size_t n = std::min(idx.size(), (size_t)std::max(K, 0));
    std::partial_sort(idx.begin(), idx.begin() + (ptrdiff_t)n, idx.end(), [&](size_t a, size_t b) {
        const double ga = gap(a), gb = gap(b);
        return ga > gb || (ga == gb && a < b);
    });
    idx.resize(n);
    return idx;
}

namespace {

RoundingPointNames rounding_points(const EngineNumerics& n, bool with_kv) {
    const auto name = [](Dtype d) { return std::string(dtype_name(d)); };
    return {.matmul = name(n.matmul),
            .residual = name(n.residual),
            .attn_probs = name(n.attn_probs),
            .stats = name(n.stats),
            .lm_head = name(n.lm_head),
            .kv_cache = with_kv ? name(n.kv_cache) : std::string(),
            .norm = name(n.norm),
            .silu = name(n.silu),
            .rope_cache = name(n.rope_cache),
            .rope = name(n.rope),
            .softmax = n.eager_softmax ? "eager" : "online"};
}

}  // namespace

WorstTokens capture_worst_tokens(const Config& cfg, const Measurement& m, const TrainEngine& train, int K) {
    const ModelConfig& model = train.config();
    const int k = model.num_experts_per_tok, V = model.vocab_size;
    WorstTokens w;
    const std::vector<int> moe_layers = model.moe_layers();
    w.moe_layers.assign(moe_layers.begin(), moe_layers.end());
    const int Lm = (int)w.moe_layers.size();
    w.rollout = rounding_points(rollout_numerics(cfg), true);
    w.train = rounding_points(train_numerics(cfg), false);
    w.kernels = kernel_family(cfg) == Family::batch_invariant ? "batch-invariant" : "fast";
    w.routing_replay = std::string(enum_name(cfg.moe.routing_replay));
    w.train_rows = m.batch.B * m.batch.T;

    const TokenView& tv = m.tokens;
    for (size_t t : worst_token_indices(m, K)) {
        const int i = tv.seq[t], pos = tv.pos[t];
        const RolloutSequence& s = m.roll.sequences[i];
        const size_t j = (size_t)(pos - s.prompt_len);  // response index
        WorstToken x;
        x.seq = i, x.pos = (int32_t)j, x.token = tv.token[t];
        x.text = Vocab::token_text(x.token);
        x.lp_roll = tv.lp_roll[t], x.lp_train = tv.lp_train[t];
        x.flips = Lm > 0 && t < m.router.per_token_sum.size() ? (int32_t)m.router.per_token_sum[t] : 0;
        x.alt_roll.assign(s.top.begin() + (ptrdiff_t)(j * kTopAlternatives),
                          s.top.begin() + (ptrdiff_t)((j + 1) * kTopAlternatives));
        // The training row that predicts position pos, ranked as the rollout's.
        const float* row = train.logprob_row(i, pos - 1);
        std::vector<int32_t> order(V);
        for (int v = 0; v < V; ++v) order[v] = v;
        const auto key = [&](int v) { return std::isnan(row[v]) ? -std::numeric_limits<float>::infinity() : row[v]; };
        const int n = std::min(kTopAlternatives, V);
        std::partial_sort(order.begin(), order.begin() + n, order.end(),
                          [&](int a, int b) { return key(a) > key(b) || (key(a) == key(b) && a < b); });
        for (int a = 0; a < n; ++a) x.alt_train.push_back({order[a], row[order[a]]});
        // Routes of the position that predicted the token, as routing_diff reads them.
        const size_t at = (size_t)pos - 1;
        for (int l = 0; l < Lm; ++l) {
            const auto r0 = s.expert_ids[l].begin() + (ptrdiff_t)(at * k);
            const auto t0 = m.train.used_expert_ids[l].begin() + (ptrdiff_t)(((size_t)i * m.batch.T + at) * k);
            x.experts_roll.emplace_back(r0, r0 + k);
            x.experts_train.emplace_back(t0, t0 + k);
        }
        x.rollout_rows = j < s.rows.size() ? s.rows[j] : 0;
        x.prefill = j == 0;  // a sequence's first response token comes from its prompt's prefill
        w.tokens.push_back(std::move(x));
    }
    return w;
}

// ---- stored form ---------------------------------------------------------------

namespace {

using nlohmann::json;

// JSON has no NaN or infinity: those are written as the exports write them.
// A finite float is written as its shortest decimal (to_chars), which reads
// back to the same float: about half the digits of the double it widens to.
json num(float v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
    char buf[32];
    const auto end = std::to_chars(buf, buf + sizeof buf, v).ptr;
    double widened = 0;
    std::from_chars(buf, end, widened);
    return widened;
}
float num_of(const json& j) {
    if (j.is_number()) return j.get<float>();
    if (j.is_string()) {
        const std::string s = j.get<std::string>();
        if (s == "Infinity") return std::numeric_limits<float>::infinity();
        if (s == "-Infinity") return -std::numeric_limits<float>::infinity();
    }
    return std::numeric_limits<float>::quiet_NaN();
}

json alts_json(const std::vector<TokenAlternative>& a) {
    json o = json::array();
    for (const TokenAlternative& x : a) o.push_back({x.token, num(x.lp)});
    return o;
}
std::vector<TokenAlternative> alts_of(const json& j) {
    std::vector<TokenAlternative> o;
    for (const json& x : j) o.push_back({x.at(0).get<int32_t>(), num_of(x.at(1))});
    return o;
}

// Each rounding point's JSON key and field, written and read alike; the KV
// cache is written only for the rollout, which has one.
constexpr std::pair<const char*, std::string RoundingPointNames::*> kPointFields[] = {
    {"matmul", &RoundingPointNames::matmul},
    {"residual", &RoundingPointNames::residual},
    {"attn_probs", &RoundingPointNames::attn_probs},
    {"stats", &RoundingPointNames::stats},
    {"lm_head", &RoundingPointNames::lm_head},
    {"kv_cache", &RoundingPointNames::kv_cache},
    {"norm", &RoundingPointNames::norm},
    {"silu", &RoundingPointNames::silu},
    {"rope_cache", &RoundingPointNames::rope_cache},
    {"rope", &RoundingPointNames::rope},
    {"softmax", &RoundingPointNames::softmax}};

json points_json(const RoundingPointNames& p) {
    json o = json::object();
    for (const auto& [key, field] : kPointFields)
        if (field != &RoundingPointNames::kv_cache || !p.kv_cache.empty()) o[key] = p.*field;
    return o;
}
RoundingPointNames points_of(const json& j) {
    RoundingPointNames p;
    for (const auto& [key, field] : kPointFields) p.*field = j.value(key, "");
    return p;
}

}  // namespace

std::string worst_tokens_json(const WorstTokens& w) {
    json toks = json::array();
    for (const WorstToken& x : w.tokens)
        toks.push_back({{"seq", x.seq},
                        {"pos", x.pos},
                        {"token", x.token},
                        {"text", x.text},
                        {"lp_roll", num(x.lp_roll)},
                        {"lp_train", num(x.lp_train)},
                        {"flips", x.flips},
                        {"alt_roll", alts_json(x.alt_roll)},
                        {"alt_train", alts_json(x.alt_train)},
                        {"experts_roll", x.experts_roll},
                        {"experts_train", x.experts_train},
                        {"rollout_rows", x.rollout_rows},
                        {"prefill", x.prefill}});
    const json o = {{"tokens", toks},
                    {"moe_layers", w.moe_layers},
                    {"rollout", points_json(w.rollout)},
                    {"train", points_json(w.train)},
                    {"kernels", w.kernels},
                    {"routing_replay", w.routing_replay},
                    {"train_rows", w.train_rows}};
    return o.dump();
}

WorstTokens parse_worst_tokens(const std::string& text) {
    WorstTokens w;
    if (text.empty()) return w;
    try {
        const json o = json::parse(text);
        if (!o.is_object()) throw std::invalid_argument("not a JSON object");
        for (const json& x : o.at("tokens")) {
            WorstToken t;
            t.seq = x.at("seq").get<int32_t>(), t.pos = x.at("pos").get<int32_t>();
            t.token = x.at("token").get<int32_t>(), t.text = x.value("text", "");
            t.lp_roll = num_of(x.at("lp_roll")), t.lp_train = num_of(x.at("lp_train"));
            t.flips = x.value("flips", 0);
            t.alt_roll = alts_of(x.at("alt_roll")), t.alt_train = alts_of(x.at("alt_train"));
            t.experts_roll = x.at("experts_roll").get<std::vector<std::vector<int32_t>>>();
            t.experts_train = x.at("experts_train").get<std::vector<std::vector<int32_t>>>();
            t.rollout_rows = x.value("rollout_rows", 0), t.prefill = x.value("prefill", false);
            w.tokens.push_back(std::move(t));
        }
        w.moe_layers = o.value("moe_layers", std::vector<int32_t>{});
        w.rollout = points_of(o.at("rollout")), w.train = points_of(o.at("train"));
        w.kernels = o.value("kernels", ""), w.routing_replay = o.value("routing_replay", "");
        w.train_rows = o.value("train_rows", 0);
    } catch (const json::exception& e) {
        throw std::invalid_argument(std::string("worst tokens: unreadable JSON: ") + e.what());
    }
    return w;
}

}  // namespace mlk
