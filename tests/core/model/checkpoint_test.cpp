// safetensors + config.json checkpoints: bitwise round trips, HF names and
// shapes, and clear errors for damaged files.
#include "core/model/checkpoint.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>

#include "core/config/config.h"
#include "core/model/vocab.h"
#include "kernels/dtype.h"

using namespace mlk;
using nlohmann::json;
namespace fs = std::filesystem;

namespace {

class CheckpointTest : public ::testing::Test {
protected:
    void SetUp() override {
        const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
        root_ = fs::temp_directory_path() /
                ("mlk_ckpt_" + std::to_string(::getpid()) + "_" + info->test_suite_name() + "_" + info->name());
        fs::remove_all(root_);
        fs::create_directories(root_);
    }
    void TearDown() override { fs::remove_all(root_); }
    std::string dir(const std::string& name) const { return (root_ / name).string(); }
    fs::path root_;
};

std::vector<float> random_arena(int64_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.0f, 1.0f);
    std::vector<float> v(static_cast<size_t>(n));
    for (auto& x : v) x = nd(rng);
    // Values whose bits a sloppy writer would lose.
    if (n > 8) {
        v[0] = -0.0f;
        v[1] = std::numeric_limits<float>::denorm_min();
        v[2] = std::numeric_limits<float>::infinity();
        v[3] = -std::numeric_limits<float>::max();
        v[4] = 1.0f + std::numeric_limits<float>::epsilon();
    }
    return v;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const CheckpointError& e) {
        return e.what();
    }
    return "<no error>";
}

// Rewrites dir/model.safetensors through `edit`, which may change the tensors
// (as F32 blobs in HF layout) before they are written back.
struct EditableTensor {
    std::string name, dtype;
    std::vector<int64_t> shape;
    std::vector<unsigned char> bytes;
};
std::vector<EditableTensor> read_all(const std::string& path, std::map<std::string, std::string>* meta) {
    SafetensorsFile f = read_safetensors(path);
    if (meta) *meta = f.metadata;
    std::vector<std::pair<uint64_t, EditableTensor>> v;
    for (const auto& [name, t] : f.tensors) {
        EditableTensor e{name, t.dtype, t.shape, {}};
        e.bytes.assign(f.data() + t.begin, f.data() + t.end);
        v.emplace_back(t.begin, std::move(e));
    }
    std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.first < b.first; });
    std::vector<EditableTensor> out;
    for (auto& p : v) out.push_back(std::move(p.second));
    return out;
}
void write_all(const std::string& path, const std::vector<EditableTensor>& ts,
               const std::map<std::string, std::string>& meta) {
    std::vector<TensorOut> out;
    for (const auto& t : ts) out.push_back({t.name, t.dtype, t.shape, t.bytes.data(), {}});
    write_safetensors(path, out, meta);
}

std::vector<unsigned char> file_bytes(const std::string& p) {
    std::ifstream f(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}
void put_bytes(const std::string& p, const std::vector<unsigned char>& b) {
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

}  // namespace

TEST_F(CheckpointTest, RoundTripIsBitwiseForEveryPreset) {
    uint32_t seed = 1;
    for (const auto& preset : model_preset_names()) {
        SCOPED_TRACE(preset);
        const ModelConfig cfg = model_preset(preset);
        const ParamLayout layout = make_param_layout(cfg);
        const std::vector<float> params = random_arena(layout.total, seed++);
        OptimizerState opt;
        opt.step = 1234567890123;
        opt.m = random_arena(layout.total, seed++);
        opt.v = random_arena(layout.total, seed++);
        for (auto& x : opt.v) x = x * x;
        const json meta = {
            {"step", 40},          {"run", "run-7"},
            {"reward", 0.1 + 0.2}, {"config", {{"rollout", {{"precision", "bf16"}}}, {"list", {1, 2.5, "x", nullptr}}}},
            {"format", "mine"},    {"mlk.private", true}};
        const std::string d = dir(preset);
        save_checkpoint(d, cfg, layout, params.data(), meta, opt);
        EXPECT_TRUE(fs::exists(d + "/model.safetensors"));
        EXPECT_TRUE(fs::exists(d + "/config.json"));
        EXPECT_TRUE(fs::exists(d + "/optimizer.safetensors"));
        for (const auto& e : fs::directory_iterator(d))
            EXPECT_EQ(e.path().filename().string().find(".tmp"), std::string::npos) << e.path();

        const LoadedCheckpoint ck = load_checkpoint(d);
        EXPECT_EQ(ck.model.preset_name(), preset);
        EXPECT_EQ(ck.model.vocab_size, cfg.vocab_size);
        EXPECT_EQ(ck.model.hidden_size, cfg.hidden_size);
        EXPECT_EQ(ck.model.num_experts, cfg.num_experts);
        EXPECT_EQ(ck.model.tie_word_embeddings, cfg.tie_word_embeddings);
        EXPECT_EQ(float_bits(ck.model.rms_norm_eps), float_bits(cfg.rms_norm_eps));
        EXPECT_EQ(float_bits(ck.model.rope_theta), float_bits(cfg.rope_theta));
        EXPECT_EQ(ck.layout.total, layout.total);
        EXPECT_TRUE(same_bits(ck.params, params));
        EXPECT_EQ(ck.metadata, meta);
        EXPECT_EQ(ck.metadata.dump(), meta.dump());
        ASSERT_TRUE(ck.optimizer.has_value());
        EXPECT_EQ(ck.optimizer->step, opt.step);
        EXPECT_TRUE(same_bits(ck.optimizer->m, opt.m));
        EXPECT_TRUE(same_bits(ck.optimizer->v, opt.v));

        // Metadata is also readable by other tools as strings.
        SafetensorsFile f = read_safetensors(d + "/model.safetensors");
        EXPECT_EQ(f.metadata.at("format"), "pt");
        EXPECT_EQ(f.metadata.at("run"), "run-7");
        EXPECT_EQ(f.metadata.at("step"), "40");
        SafetensorsFile o = read_safetensors(d + "/optimizer.safetensors");
        EXPECT_EQ(o.metadata.at("step"), "1234567890123");
        EXPECT_EQ(o.tensors.size(), 2 * layout.specs.size());

        // Saving again without optimizer state removes the stale optimizer file.
        save_checkpoint(d, cfg, layout, params.data());
        EXPECT_FALSE(fs::exists(d + "/optimizer.safetensors"));
        const LoadedCheckpoint ck2 = load_checkpoint(d);
        EXPECT_FALSE(ck2.optimizer.has_value());
        EXPECT_EQ(ck2.metadata, json::object());
        EXPECT_TRUE(same_bits(ck2.params, params));
    }
}

TEST_F(CheckpointTest, FileFormatAndHuggingFaceNames) {
    const ModelConfig cfg = model_preset("moe-small");
    const ParamLayout layout = make_param_layout(cfg);
    std::vector<float> params(static_cast<size_t>(layout.total));
    for (size_t i = 0; i < params.size(); ++i) params[i] = static_cast<float>(i);
    save_checkpoint(dir("m"), cfg, layout, params.data());

    const auto bytes = file_bytes(dir("m") + "/model.safetensors");
    uint64_t hlen;
    std::memcpy(&hlen, bytes.data(), 8);
    EXPECT_EQ((8 + hlen) % 8, 0u);
    EXPECT_EQ(bytes[8], '{');
    EXPECT_EQ(bytes.size(), 8 + hlen + static_cast<uint64_t>(layout.total) * 4);

    SafetensorsFile f = read_safetensors(dir("m") + "/model.safetensors");
    EXPECT_EQ(f.tensors.size(), layout.specs.size());
    const int64_t D = cfg.hidden_size, Fm = cfg.moe_intermediate_size;
    auto shape = [&](const std::string& n) { return f.tensors.at(n).shape; };
    EXPECT_EQ(shape("model.layers.0.mlp.experts.3.down_proj.weight"), (std::vector<int64_t>{D, Fm}));
    EXPECT_EQ(shape("model.layers.0.mlp.experts.3.gate_proj.weight"), (std::vector<int64_t>{Fm, D}));
    EXPECT_EQ(shape("model.layers.3.mlp.gate.weight"), (std::vector<int64_t>{cfg.num_experts, D}));
    EXPECT_EQ(shape("model.layers.0.self_attn.q_proj.weight"), (std::vector<int64_t>{cfg.num_heads * cfg.head_dim, D}));
    EXPECT_EQ(shape("model.layers.0.self_attn.k_proj.weight"),
              (std::vector<int64_t>{cfg.num_kv_heads * cfg.head_dim, D}));
    EXPECT_EQ(shape("model.layers.0.self_attn.q_norm.weight"), (std::vector<int64_t>{cfg.head_dim}));
    EXPECT_EQ(shape("model.embed_tokens.weight"), (std::vector<int64_t>{Vocab::size(), D}));
    EXPECT_EQ(shape("lm_head.weight"), (std::vector<int64_t>{Vocab::size(), D}));
    EXPECT_EQ(shape("model.norm.weight"), (std::vector<int64_t>{D}));
    for (const auto& [name, t] : f.tensors) EXPECT_EQ(t.dtype, "F32") << name;

    // Transposition: arena [in, out] element (k, n) is HF [out, in] element (n, k).
    const ParamSpec* s = layout.find("model.layers.1.mlp.experts.5.down_proj.weight");
    ASSERT_NE(s, nullptr);
    ASSERT_TRUE(s->transposed);
    const std::vector<float> hf = f.to_f32(s->name);
    const int64_t K = s->shape[0], N = s->shape[1];
    for (int64_t k : {int64_t(0), int64_t(7), K - 1})
        for (int64_t n : {int64_t(0), int64_t(3), N - 1})
            EXPECT_EQ(hf[static_cast<size_t>(n * K + k)], params[static_cast<size_t>(s->offset + k * N + n)]);

    // Dense tiny: MLP shapes, tied embeddings (no lm_head).
    const ModelConfig dcfg = model_preset("dense-tiny");
    const ParamLayout dl = make_param_layout(dcfg);
    std::vector<float> dp(static_cast<size_t>(dl.total), 0.5f);
    save_checkpoint(dir("d"), dcfg, dl, dp.data());
    SafetensorsFile df = read_safetensors(dir("d") + "/model.safetensors");
    EXPECT_EQ(df.tensors.at("model.layers.0.mlp.down_proj.weight").shape,
              (std::vector<int64_t>{dcfg.hidden_size, dcfg.intermediate_size}));
    EXPECT_EQ(df.tensors.at("model.layers.1.mlp.up_proj.weight").shape,
              (std::vector<int64_t>{dcfg.intermediate_size, dcfg.hidden_size}));
    EXPECT_EQ(df.tensors.count("lm_head.weight"), 0u);
}

TEST_F(CheckpointTest, ConfigJsonForDenseAndMoe) {
    const ModelConfig d = model_preset("dense-small");
    const ParamLayout dl = make_param_layout(d);
    std::vector<float> dp(static_cast<size_t>(dl.total), 0.0f);
    save_checkpoint(dir("d"), d, dl, dp.data());
    json j = json::parse(std::ifstream(dir("d") + "/config.json"));
    EXPECT_EQ(j["model_type"], "qwen3");
    EXPECT_EQ(j["architectures"], json::array({"Qwen3ForCausalLM"}));
    EXPECT_EQ(j["vocab_size"], Vocab::size());
    EXPECT_EQ(j["hidden_size"], d.hidden_size);
    EXPECT_EQ(j["intermediate_size"], d.intermediate_size);
    EXPECT_EQ(j["num_hidden_layers"], d.num_layers);
    EXPECT_EQ(j["num_attention_heads"], d.num_heads);
    EXPECT_EQ(j["num_key_value_heads"], d.num_kv_heads);
    EXPECT_EQ(j["head_dim"], d.head_dim);
    EXPECT_EQ(j["rms_norm_eps"].get<double>(), 1e-6);
    EXPECT_EQ(j["rope_theta"].get<double>(), 10000.0);
    EXPECT_EQ(j["max_position_embeddings"], d.max_position_embeddings);
    EXPECT_EQ(j["tie_word_embeddings"], d.tie_word_embeddings);
    EXPECT_EQ(j["hidden_act"], "silu");
    EXPECT_EQ(j["attention_bias"], false);
    EXPECT_EQ(j["torch_dtype"], "float32");
    EXPECT_FALSE(j.contains("num_experts"));

    const ModelConfig m = model_preset("moe-tiny");
    const ParamLayout ml = make_param_layout(m);
    std::vector<float> mp(static_cast<size_t>(ml.total), 0.0f);
    save_checkpoint(dir("m"), m, ml, mp.data());
    j = json::parse(std::ifstream(dir("m") + "/config.json"));
    EXPECT_EQ(j["model_type"], "qwen3_moe");
    EXPECT_EQ(j["architectures"], json::array({"Qwen3MoeForCausalLM"}));
    EXPECT_EQ(j["num_experts"], m.num_experts);
    EXPECT_EQ(j["num_experts_per_tok"], m.num_experts_per_tok);
    EXPECT_EQ(j["moe_intermediate_size"], m.moe_intermediate_size);
    EXPECT_EQ(j["norm_topk_prob"], true);
    EXPECT_EQ(j["decoder_sparse_step"], 1);
    EXPECT_EQ(j["mlp_only_layers"], json::array());
    EXPECT_EQ(j["tie_word_embeddings"], false);

    // Parsing back, and refusing what the model cannot represent.
    EXPECT_EQ(model_config_from_hf(hf_config_json(m)).preset_name(), "moe-tiny");
    json bad = hf_config_json(m);
    bad["model_type"] = "llama";
    EXPECT_NE(error_of([&] { model_config_from_hf(bad); }).find("llama"), std::string::npos);
    bad = hf_config_json(m);
    bad.erase("hidden_size");
    EXPECT_NE(error_of([&] { model_config_from_hf(bad); }).find("hidden_size"), std::string::npos);
    bad = hf_config_json(m);
    bad["mlp_only_layers"] = {0, 5};  // moe-tiny has layers 0 and 1
    EXPECT_NE(error_of([&] { model_config_from_hf(bad); }).find("mlp_only_layers: layer 5 does not exist"),
              std::string::npos);
    json custom = hf_config_json(d);
    custom["hidden_size"] = 96;
    EXPECT_EQ(model_config_from_hf(custom).size, "custom");
}

// A model with dense and MoE layers, built from model.* settings: the
// config.json carries every dimension under Hugging Face Qwen3-MoE names, its
// dense layers' tensors are named as transformers names them, and loading
// gives back the same model and the same bits.
TEST_F(CheckpointTest, MixedDenseAndMoeLayersRoundTrip) {
    const Config c = config_from_json({{"model.kind", "moe"},
                                       {"model.size", "small"},
                                       {"model.num_layers", 5},
                                       {"model.decoder_sparse_step", 2},
                                       {"model.mlp_only_layers", "3"},
                                       {"model.intermediate_size", 160},
                                       {"model.num_experts", 6},
                                       {"model.num_experts_per_tok", 3},
                                       {"model.head_dim", 8},
                                       {"model.tie_word_embeddings", "true"},
                                       {"model.max_position_embeddings", 96}});
    const ModelConfig cfg = model_config_of(c);
    ASSERT_EQ(cfg.moe_layers(), std::vector<int>({1}));  // (l + 1) % 2 == 0 -> 1, 3; 3 is dense-only
    const ParamLayout layout = make_param_layout(cfg);
    const std::vector<float> params = random_arena(layout.total, 77);
    save_checkpoint(dir("mixed"), cfg, layout, params.data());

    const json j = json::parse(std::ifstream(dir("mixed") + "/config.json"));
    EXPECT_EQ(j["model_type"], "qwen3_moe");
    EXPECT_EQ(j["num_hidden_layers"], 5);
    EXPECT_EQ(j["decoder_sparse_step"], 2);
    EXPECT_EQ(j["mlp_only_layers"], json::array({3}));
    EXPECT_EQ(j["intermediate_size"], 160);
    EXPECT_EQ(j["num_experts"], 6);
    EXPECT_EQ(j["num_experts_per_tok"], 3);
    EXPECT_EQ(j["head_dim"], 8);
    EXPECT_EQ(j["tie_word_embeddings"], true);
    EXPECT_EQ(j["max_position_embeddings"], 96);
    // Every model.* dimension is in config.json under its Hugging Face name,
    // and those fields, set as the keys they name, build the same model.
    Config back = config_from_json({{"model.kind", "moe"}});
    for (const ConfigKey& k : config_schema()) {
        if (k.hf.empty()) continue;
        ASSERT_TRUE(j.contains(k.hf)) << k.key << " as " << k.hf;
        const json& v = j[k.hf];
        if (k.type == ValueType::text) config_set(back, k.key, layer_list_text(v.get<std::vector<int>>()));
        else if (v.is_boolean()) config_set(back, k.key, v.get<bool>() ? "true" : "false");
        else config_set(back, k.key, v);
    }
    EXPECT_NO_THROW(validate(back));
    EXPECT_EQ(model_config_of(back), cfg);

    const SafetensorsFile f = read_safetensors(dir("mixed") + "/model.safetensors");
    for (int l = 0; l < cfg.num_layers; ++l) {
        const std::string p = "model.layers." + std::to_string(l) + ".mlp.";
        EXPECT_EQ(f.tensors.count(p + "gate.weight"), l == 1 ? 1u : 0u) << l;
        EXPECT_EQ(f.tensors.count(p + "experts.5.down_proj.weight"), l == 1 ? 1u : 0u) << l;
        EXPECT_EQ(f.tensors.count(p + "gate_proj.weight"), l == 1 ? 0u : 1u) << l;
        if (l != 1) {
            EXPECT_EQ(f.tensors.at(p + "down_proj.weight").shape,
                      (std::vector<int64_t>{cfg.hidden_size, cfg.intermediate_size}));
        }
    }
    EXPECT_EQ(f.tensors.size(), layout.specs.size());

    const LoadedCheckpoint ck = load_checkpoint(dir("mixed"));
    EXPECT_EQ(ck.model, cfg);
    EXPECT_EQ(ck.model.size, "custom");
    EXPECT_EQ(ck.layout.total, layout.total);
    EXPECT_TRUE(same_bits(ck.params, params));
    EXPECT_EQ(model_config_from_hf(hf_config_json(cfg)), cfg);
    // config.json's list is a set to transformers: any order reads the same.
    json shuffled = hf_config_json(cfg);
    shuffled["decoder_sparse_step"] = 1;
    shuffled["mlp_only_layers"] = {4, 0, 2};
    EXPECT_EQ(model_config_from_hf(shuffled).moe_layers(), std::vector<int>({1, 3}));
    // What the settings refuse, config.json does too, under its own names.
    shuffled["num_attention_heads"] = 6;
    EXPECT_NE(error_of([&] {
                  model_config_from_hf(shuffled);
              }).find("num_attention_heads (6) must be a multiple of num_key_value_heads (4)"),
              std::string::npos);
    shuffled = hf_config_json(cfg);
    shuffled["mlp_only_layers"] = {0, 1, 2, 3, 4};
    EXPECT_NE(error_of([&] { model_config_from_hf(shuffled); }).find("needs at least one MoE layer"),
              std::string::npos);

    // Every preset reads back as itself, the deep ones included.
    for (const auto& name : model_preset_names())
        EXPECT_EQ(model_config_from_hf(hf_config_json(model_preset(name))), model_preset(name)) << name;
}

TEST_F(CheckpointTest, ErrorsNameTheProblem) {
    const ModelConfig cfg = model_preset("moe-tiny");
    const ParamLayout layout = make_param_layout(cfg);
    const std::vector<float> params = random_arena(layout.total, 5);
    const std::string d = dir("c");
    const std::string model = d + "/model.safetensors";
    save_checkpoint(d, cfg, layout, params.data());
    const auto good = file_bytes(model);
    std::map<std::string, std::string> meta;
    const auto tensors = read_all(model, &meta);
    const std::string last = tensors.back().name;  // the tensor whose data ends the file

    // Truncated data: the error names the tensor that runs past the end.
    put_bytes(model, std::vector<unsigned char>(good.begin(), good.end() - 100));
    std::string e = error_of([&] { load_checkpoint(d); });
    EXPECT_NE(e.find("truncated"), std::string::npos) << e;
    EXPECT_NE(e.find(last), std::string::npos) << e;

    // Truncated inside the header / shorter than the length field.
    put_bytes(model, std::vector<unsigned char>(good.begin(), good.begin() + 40));
    e = error_of([&] { load_checkpoint(d); });
    EXPECT_NE(e.find("truncated"), std::string::npos) << e;
    EXPECT_NE(e.find("header length"), std::string::npos) << e;
    put_bytes(model, std::vector<unsigned char>(good.begin(), good.begin() + 5));
    e = error_of([&] { load_checkpoint(d); });
    EXPECT_NE(e.find("truncated"), std::string::npos) << e;

    // Corrupt header JSON.
    auto corrupt = good;
    corrupt[8] = 'X';
    put_bytes(model, corrupt);
    e = error_of([&] { load_checkpoint(d); });
    EXPECT_NE(e.find("corrupt header"), std::string::npos) << e;
    EXPECT_NE(e.find("model.safetensors"), std::string::npos) << e;

    // A header field missing: the error names the tensor and the field.
    {
        uint64_t hlen;
        std::memcpy(&hlen, good.data(), 8);
        json h = json::parse(good.begin() + 8, good.begin() + 8 + static_cast<long>(hlen));
        h["model.norm.weight"].erase("data_offsets");
        std::string hs = h.dump();
        while ((8 + hs.size()) % 8) hs += ' ';
        std::vector<unsigned char> b(8);
        const uint64_t n = hs.size();
        std::memcpy(b.data(), &n, 8);
        b.insert(b.end(), hs.begin(), hs.end());
        b.insert(b.end(), good.begin() + 8 + static_cast<long>(hlen), good.end());
        put_bytes(model, b);
        e = error_of([&] { load_checkpoint(d); });
        EXPECT_NE(e.find("model.norm.weight"), std::string::npos) << e;
        EXPECT_NE(e.find("data_offsets"), std::string::npos) << e;
    }

    // Wrong shape: name, expected and got.
    {
        auto ts = tensors;
        for (auto& t : ts)
            if (t.name == "model.layers.1.mlp.gate.weight") std::swap(t.shape[0], t.shape[1]);
        write_all(model, ts, meta);
        e = error_of([&] { load_checkpoint(d); });
        EXPECT_NE(e.find("model.layers.1.mlp.gate.weight"), std::string::npos) << e;
        EXPECT_NE(e.find("wrong shape [64, 8], expected [8, 64]"), std::string::npos) << e;
        auto ts2 = tensors;
        for (auto& t : ts2)
            if (t.name == "model.layers.0.self_attn.k_proj.weight") {
                t.shape = {16, 128};
            }
        write_all(model, ts2, meta);
        e = error_of([&] { load_checkpoint(d); });
        EXPECT_NE(e.find("model.layers.0.self_attn.k_proj.weight"), std::string::npos) << e;
        EXPECT_NE(e.find("[16, 128]"), std::string::npos) << e;
        EXPECT_NE(e.find("expected [32, 64]"), std::string::npos) << e;
    }

    // Missing tensor.
    {
        auto ts = tensors;
        ts.erase(std::remove_if(ts.begin(), ts.end(),
                                [](auto& t) { return t.name == "model.layers.0.mlp.experts.7.up_proj.weight"; }),
                 ts.end());
        write_all(model, ts, meta);
        e = error_of([&] { load_checkpoint(d); });
        EXPECT_NE(e.find("missing tensor model.layers.0.mlp.experts.7.up_proj.weight"), std::string::npos) << e;
    }

    // Unexpected tensor.
    {
        auto ts = tensors;
        ts.push_back({"model.layers.9.mlp.gate.weight", "F32", {2}, std::vector<unsigned char>(8, 0)});
        write_all(model, ts, meta);
        e = error_of([&] { load_checkpoint(d); });
        EXPECT_NE(e.find("unexpected tensor model.layers.9.mlp.gate.weight"), std::string::npos) << e;
    }

    // Unsupported dtype.
    {
        auto ts = tensors;
        for (auto& t : ts)
            if (t.name == "model.norm.weight") t.dtype = "I32";
        write_all(model, ts, meta);
        e = error_of([&] { load_checkpoint(d); });
        EXPECT_NE(e.find("model.norm.weight"), std::string::npos) << e;
        EXPECT_NE(e.find("I32"), std::string::npos) << e;
    }

    // Missing file.
    fs::remove(model);
    e = error_of([&] { load_checkpoint(d); });
    EXPECT_NE(e.find("model.safetensors"), std::string::npos) << e;
    EXPECT_NE(error_of([&] { load_checkpoint(dir("nowhere")); }).find("not a directory"), std::string::npos);
}

TEST_F(CheckpointTest, OptimizerFromAnotherSaveIsRefused) {
    const ModelConfig cfg = model_preset("dense-tiny");
    const ParamLayout layout = make_param_layout(cfg);
    const std::vector<float> params = random_arena(layout.total, 9);
    OptimizerState opt{3, random_arena(layout.total, 10), random_arena(layout.total, 11)};
    save_checkpoint(dir("a"), cfg, layout, params.data(), {}, opt);
    save_checkpoint(dir("b"), cfg, layout, params.data(), {}, opt);
    fs::copy_file(dir("a") + "/optimizer.safetensors", dir("b") + "/optimizer.safetensors",
                  fs::copy_options::overwrite_existing);
    const std::string e = error_of([&] { load_checkpoint(dir("b")); });
    EXPECT_NE(e.find("optimizer.safetensors"), std::string::npos) << e;
    EXPECT_NE(e.find("different save"), std::string::npos) << e;
    OptimizerState wrong{1, std::vector<float>(3), std::vector<float>(3)};
    EXPECT_THROW(save_checkpoint(dir("c"), cfg, layout, params.data(), {}, wrong), CheckpointError);
}

TEST_F(CheckpointTest, HalfPrecisionTensorsAreConverted) {
    const ModelConfig cfg = model_preset("dense-tiny");
    const ParamLayout layout = make_param_layout(cfg);
    const std::vector<float> params = random_arena(layout.total, 21);
    const std::string d = dir("h");
    const std::string model = d + "/model.safetensors";
    save_checkpoint(d, cfg, layout, params.data(), {{"note", "x"}});
    std::map<std::string, std::string> meta;
    auto ts = read_all(model, &meta);
    meta.erase("mlk.metadata");  // as a file from elsewhere would be
    // Even tensors as BF16, odd ones as F16.
    for (size_t i = 0; i < ts.size(); ++i) {
        auto& t = ts[i];
        std::vector<float> f(t.bytes.size() / 4);
        std::memcpy(f.data(), t.bytes.data(), t.bytes.size());
        std::vector<unsigned char> b(f.size() * 2);
        for (size_t k = 0; k < f.size(); ++k) {
            const uint16_t h = i % 2 == 0 ? f32_to_bf16_bits(f[k]) : f32_to_f16_bits(f[k]);
            std::memcpy(b.data() + 2 * k, &h, 2);
        }
        t.dtype = i % 2 == 0 ? "BF16" : "F16";
        t.bytes = std::move(b);
    }
    write_all(model, ts, meta);
    const LoadedCheckpoint ck = load_checkpoint(d);
    // Expected: the parameters rounded per tensor.
    SafetensorsFile f = read_safetensors(model);
    ASSERT_EQ(ck.params.size(), params.size());
    for (const auto& s : layout.specs) {
        const bool bf16 = f.tensors.at(s.name).dtype == "BF16";
        for (int64_t i = 0; i < s.numel; ++i) {
            const float want = round_to(params[static_cast<size_t>(s.offset + i)], bf16 ? Dtype::bf16 : Dtype::f16);
            const float got = ck.params[static_cast<size_t>(s.offset + i)];
            ASSERT_TRUE(float_bits(want) == float_bits(got) || (std::isnan(want) && std::isnan(got)))
                << s.name << "[" << i << "] " << want << " vs " << got;
        }
    }
    EXPECT_EQ(ck.metadata["note"], "x");  // plain string metadata of a foreign file
    EXPECT_EQ(ck.metadata["format"], "pt");
}
