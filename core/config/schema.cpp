// The schema table: one entry per setting, in display order, with its label,
// range, description and community names (see config.h). A table, so it is the
// one source file allowed past the length limit.
#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "core/config/model_builder.h"
#include "core/config/schema_table.h"

namespace mlk::config_detail {

using nlohmann::json;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// `ref` is a generic lambda returning a reference to the field in a Config.
template <class Ref>
Entry field(const char* key, Ref ref) {
    using T = std::remove_cvref_t<decltype(ref(std::declval<Config&>()))>;
    Entry e;
    e.meta.key = key;
    e.meta.min = -kInf, e.meta.max = kInf;
    if constexpr (std::is_same_v<T, bool>) {
        e.meta.type = ValueType::boolean;
        e.get = [ref](const Config& c) { return json(ref(c)); };
        e.put = [ref](Config& c, const json& v) { ref(c) = v.get<bool>(); };
    } else if constexpr (std::is_integral_v<T>) {
        e.meta.type = ValueType::integer;
        e.meta.min = static_cast<double>(std::numeric_limits<T>::min());
        e.meta.max = static_cast<double>(std::numeric_limits<T>::max());
        e.get = [ref](const Config& c) { return json(static_cast<int64_t>(ref(c))); };
        e.put = [ref](Config& c, const json& v) { ref(c) = static_cast<T>(v.get<int64_t>()); };
    } else if constexpr (std::is_same_v<T, std::string>) {
        e.meta.type = ValueType::text;
        e.get = [ref](const Config& c) { return json(ref(c)); };
        e.put = [ref](Config& c, const json& v) { ref(c) = v.get<std::string>(); };
    } else if constexpr (std::is_floating_point_v<T>) {
        e.meta.type = ValueType::number;
        e.get = [ref](const Config& c) { return json(static_cast<double>(ref(c))); };
        e.put = [ref](Config& c, const json& v) { ref(c) = static_cast<T>(v.get<double>()); };
    } else {
        static_assert(std::is_enum_v<T>);
        e.meta.type = ValueType::enumeration;
        e.meta.allowed = enum_names<T>();
        e.get = [ref](const Config& c) { return json(std::string(enum_name(ref(c)))); };
        e.put = [ref](Config& c, const json& v) { ref(c) = *enum_from_name<T>(v.get<std::string>()); };
    }
    return e;
}

// The dotted key is the C++ path of the field: one spelling, two uses.
#define F(path) \
#path, [](auto& c) -> auto& { return c.path; }

constexpr double kMaxSeed = 9007199254740991.0;  // 2^53 - 1: exact in every JSON reader

constexpr const char* kProfileDesc =
    "Where this engine rounds, each point as the named engine's own kernels do (docs/science.md gives the "
    "source file and function of each; each point can be overridden below). simple: one storage precision (the "
    "precision key) for weights, activations, residual stream and LM head, every fused expression rounded once. "
    "fp32-reference: nothing narrow. Every bf16 stack below has bf16 GEMMs, the residual added and stored in "
    "bf16, fp32 statistics, FlashAttention's online softmax with a bf16 P tile, and a bf16 LM head. vllm-bf16 "
    "(vLLM's CUDA kernels): RMSNorm rounds x/rms to bf16 before the weight, SiLU rounded before the product, a "
    "bf16 cos/sin cache rotated in fp32. sglang-bf16 (flashinfer's kernels): RMSNorm, SiLU-and-mul and RoPE in "
    "fp32, rounded once. sglang-fp8: sglang-bf16 with FP8 e4m3 W8A8 GEMMs (fp32 scales, per-token activations x "
    "per-channel weights; router and LM head stay bf16). fsdp-bf16 (Hugging Face modules): RMSNorm, SiLU and "
    "RoPE each in bf16 steps, a bf16 cos/sin cache. megatron-bf16 (Transformer Engine): RMSNorm, SwiGLU and RoPE "
    "fused in fp32, rounded once.";

// The rounding points of an engine, keys "<engine>.<point>".
template <class Section>
void add_point_entries(std::vector<Entry>& t, const std::string& section, const Config& defaults,
                       const std::string& engine, Section sec) {
    const auto add = [&](const std::string& name, auto member, const char* label, const char* desc) {
        Entry e = field((engine + "." + name).c_str(), [ sec, member ](auto& c) -> auto& { return sec(c).*member; });
        e.label(label).desc(desc);
        e.meta.key = engine + "." + name;  // the key outlives this function
        e.meta.section = section;
        e.meta.default_value = e.get(defaults);
        t.push_back(std::move(e));
    };
    add("matmul_dtype", &RoundingPoints::matmul_dtype, "Matmul",
        "Precision of the weights and of every linear layer's input (auto: the profile's). fp8_e4m3 / fp8_e5m2: "
        "W8A8 with dynamic activation scales (fp8_scale, fp8_granularity), fp32 accumulation, bf16 outputs.");
    add("residual_dtype", &RoundingPoints::residual_dtype, "Residual stream",
        "Storage of the residual stream between blocks: bf16 where the residual is added and stored in the "
        "activation type (every bf16 profile: vLLM's and flashinfer's fused add + RMSNorm, Hugging Face modules, "
        "Megatron by default), fp32 where it is kept wide (Megatron's fp32_residual_connection=True). auto: the "
        "profile's.");
    add("norm_dtype", &RoundingPoints::norm_dtype, "RMSNorm before weight",
        "RMSNorm's x * (1/rms), rounded to this before it multiplies the norm weight: bf16 as vLLM's rms_norm "
        "and Hugging Face's `weight * x.to(dtype)` (two roundings); fp32 as flashinfer's and Transformer Engine's "
        "fused norms (x * r * w rounded once). auto: the profile's.");
    add("silu_dtype", &RoundingPoints::silu_dtype, "SiLU before product",
        "SwiGLU's silu(gate), rounded to this before it multiplies up: bf16 as vLLM's silu_and_mul and Hugging "
        "Face's act_fn(gate) * up; fp32 as flashinfer's act_and_mul and Megatron's fused SwiGLU (rounded once). "
        "auto: the profile's.");
    add("rope_cache_dtype", &RoundingPoints::rope_cache_dtype, "RoPE cos/sin cache",
        "Precision of RoPE's cos/sin cache: bf16 as vLLM's (cast to the model dtype) and Hugging Face's "
        "(`cos.to(x.dtype)`); fp32 as SGLang's on CUDA and Transformer Engine's fused RoPE. auto: the profile's.");
    add("rope_dtype", &RoundingPoints::rope_dtype, "RoPE arithmetic",
        "RoPE's rotation arithmetic: bf16 = each product and sum rounded to bf16 (Hugging Face's "
        "`q * cos + rotate_half(q) * sin` in bf16 ops); fp32 = the rotation in fp32, rounded once (vLLM's "
        "rotary kernel, flashinfer, Transformer Engine). auto: the profile's.");
    add("attn_softmax", &RoundingPoints::attn_softmax, "Attention softmax",
        "online: FlashAttention's softmax, P = exp(s - max) rounded to the P tile's precision for P.V, the sum "
        "taken unrounded and divided out after P.V (every profile: each engine's default attention is a "
        "FlashAttention kernel). eager: Hugging Face's eager attention, softmax(s) in fp32 normalised first, "
        "rounded, then P.V. auto: the profile's.");
    add("attn_probs_dtype", &RoundingPoints::attn_probs_dtype, "Attention P tile",
        "Precision of the attention probabilities as P.V reads them (FlashAttention rounds its P tile to bf16; "
        "the softmax normaliser sums them unrounded). auto: the profile's.");
    add("stats_dtype", &RoundingPoints::stats_dtype, "Statistics",
        "Storage of RMSNorm's 1/rms, log-softmax's log-sum-exp and attention's normaliser. auto: the profile's.");
    add("lm_head_dtype", &RoundingPoints::lm_head_dtype, "LM head",
        "Precision of the LM head's weights and of the logits; log-probs are computed from them in fp32. fp32 is "
        "MiniMax-M1's fix for the training / inference probability gap. auto: the profile's.");
    add("fp8_scale", &RoundingPoints::fp8_scale, "FP8 scales",
        "How an fp8 scale is computed, for an fp8 matmul and (rollout) an fp8 KV cache: fp32 = amax / fp8_max as "
        "vLLM and SGLang compute it; pow2 = the smallest power of two that fits (UE8M0, as MXFP8 and DeepSeek's "
        "recipes). Refused where nothing is fp8. auto: the profile's (fp32).");
    add("fp8_granularity", &RoundingPoints::fp8_granularity, "FP8 granularity",
        "Which values of an fp8 matmul share a scale: tensor (one dynamic scale per activation tensor, one per "
        "weight), channel (per token x per output channel), block (1x128 activation slices, 128x128 weight "
        "blocks, as DeepSeek-V3 and SGLang's block FP8). Refused unless the matmul is fp8. auto: the profile's "
        "(channel).");
}

std::vector<Entry> build_schema() {
    std::vector<Entry> t;
    std::string section;
    const Config defaults;
    auto add = [&](Entry& e) {
        e.meta.section = section;
        e.meta.default_value = e.get(defaults);
        t.push_back(std::move(e));
    };
    auto add_points = [&](const std::string& engine, auto sec) {
        add_point_entries(t, section, defaults, engine, sec);
    };

    section = "Task";
    add(field(F(task.name))
            .label("Task")
            .desc("Verifiable-reward task: addition (\"12+7=\" -> \"19\"), sort digits (\"3120:\" -> \"0123\"), "
                  "reverse letters (\"abc|\" -> \"cba\"); long_addition, a column-by-column scratchpad "
                  "(\"482+973=\" -> \"2+3+0=05,8+7+0=15,4+9+1=14,|1455\"); calculator, a multi-turn tool task "
                  "whose tool output the environment inserts and the loss and metrics skip "
                  "(\"37*48+12*95=\" -> \"c:37*48;1776;c:12*95;1140;c:1776+1140;2916;|2916\")."));
    add(field(F(task.length))
            .label("Length")
            .range(1, 8)
            .desc("Problem size: digits per operand (addition, long_addition: about 10 response tokens per "
                  "digit), list length (sort), string length (reverse), or number of products (calculator: "
                  "about 18 response tokens per product)."));
    add(field(F(task.partial_credit))
            .label("Partial credit")
            .desc("Reward = fraction of answer positions right, extra or missing characters costing credit, "
                  "instead of exact match (1 or 0)."));
    add(field(F(task.eval_size))
            .label("Eval prompts")
            .range(8, 1024)
            .desc("Held-out prompts used to measure accuracy; they never appear in training."));

    section = "Model";
    add(field(F(model.kind))
            .label("Architecture")
            .desc("dense: SwiGLU MLP in every layer. moe: Qwen3-MoE style router with top-k experts, where "
                  "routing flips between the engines add mismatch."));
    add(field(F(model.size))
            .label("Size")
            .desc("Preset dimensions: tiny (hidden 64, 2 layers; MoE 8 experts, top-2), small (hidden 128, "
                  "4 layers; MoE 16 experts, top-4) or deep (hidden 128, 12 layers; MoE 48 experts, top-6, where "
                  "router flips compound from layer to layer). The settings below override single dimensions."));
    // The dimensions: 0 keeps the size preset's value, so the defaults build
    // exactly the preset. Ranges keep every single setting buildable; the
    // parameter budget (model_builder.h) bounds their product.
    add(field(F(model.hidden_size))
            .label("Hidden size")
            .range(0, 2048)
            .desc("Width D of the residual stream and the embeddings. 0 = preset; tiny 64, small and deep 128.")
            .hf("hidden_size"));
    add(field(F(model.num_layers))
            .label("Layers")
            .range(0, 64)
            .desc("Number of decoder layers. 0 = preset; tiny 2, small 4, deep 12.")
            .hf("num_hidden_layers"));
    add(field(F(model.num_heads))
            .label("Attention heads")
            .range(0, 64)
            .desc("Query heads per layer; a multiple of model.num_kv_heads. 0 = preset; tiny 4, small and deep 8.")
            .hf("num_attention_heads"));
    add(field(F(model.num_kv_heads))
            .label("Key/value heads")
            .range(0, 64)
            .desc("Key/value heads per layer (grouped-query attention: each serves num_heads / num_kv_heads query "
                  "heads). 0 = preset; tiny 2, small and deep 4.")
            .hf("num_key_value_heads"));
    add(field(F(model.head_dim))
            .label("Head dimension")
            .range(0, 256)
            .desc("Width of one attention head; even, as RoPE rotates pairs of dimensions. 0 = preset; 16.")
            .hf("head_dim"));
    add(field(F(model.intermediate_size))
            .label("MLP width")
            .range(0, 16384)
            .desc("Width F of the dense SwiGLU MLP, in a dense model and in the dense layers of an MoE model "
                  "(model.mlp_only_layers, model.decoder_sparse_step). 0 = preset; tiny 192, small and deep 384; "
                  "moe-tiny and moe-small 192.")
            .hf("intermediate_size"));
    add(field(F(model.num_experts))
            .label("Experts")
            .range(0, 256)
            .desc("Experts E per MoE layer (model.kind=moe). 0 = preset; tiny 8, small 16, deep 48.")
            .hf("num_experts"));
    add(field(F(model.num_experts_per_tok))
            .label("Experts per token")
            .range(0, 64)
            .desc("Top-k: experts each token is routed to, at most model.num_experts; the gate softmax is taken over "
                  "their router logits. 0 = preset; tiny 2, small 4, deep 6.")
            .hf("num_experts_per_tok"));
    add(field(F(model.moe_intermediate_size))
            .label("Expert width")
            .range(0, 8192)
            .desc("SwiGLU width Fm of one expert. 0 = preset; tiny 64, small 96, deep 64.")
            .hf("moe_intermediate_size"));
    add(field(F(model.decoder_sparse_step))
            .label("MoE layer step")
            .range(0, 64)
            .desc("As in Qwen3-MoE: layer l (from 0) is MoE iff (l + 1) is a multiple of this step and l is not in "
                  "model.mlp_only_layers; other layers have a dense MLP of model.intermediate_size. 0 = preset; "
                  "1, every layer MoE.")
            .hf("decoder_sparse_step"));
    add(field(F(model.mlp_only_layers))
            .label("Dense-only layers")
            .text_format("layer indices in ascending order separated by commas, e.g. 0,3 (\"\" = none)",
                         [](const std::string& t) {
                             std::string why;
                             return parse_layer_list(t, &why) ? std::string() : why;
                         })
            .desc("Layers of an MoE model that have a dense SwiGLU MLP instead of experts, e.g. \"0\" for a dense "
                  "first layer as some MoEs have; \"\" = none. Indices start at 0 and must be below model.num_layers.")
            .hf("mlp_only_layers"));
    add(field(F(model.tie_word_embeddings))
            .label("Tied LM head")
            .desc("true: the LM head is the transposed token embedding; false: a separate weight. auto = preset "
                  "(dense models tied, MoE models untied).")
            .hf("tie_word_embeddings"));
    add(field(F(model.max_position_embeddings))
            .label("Max positions")
            .range(0, 4096)
            .desc("Longest sequence (prompt + response) the model accepts; a config whose longest prompt plus "
                  "rollout.max_new_tokens is longer is refused. 0 = preset; 128.")
            .hf("max_position_embeddings"));

    section = "Rollout engine";
    add(field(F(rollout.device))
            .label("Rollout device")
            .desc("Where the rollout engine runs: cpu, or cuda (the first visible NVIDIA GPU, with the CUDA "
                  "backend's kernels: cuBLAS for the fast family, this project's own for the batch-invariant one). "
                  "With rollout.device and train.device apart, rollout and training run on different hardware: "
                  "with batch-invariant kernels and equal numerics their log-probs still agree bit for bit; with "
                  "fast kernels they differ as production stacks do. cuda needs a build with the CUDA toolkit and "
                  "a visible GPU; a run that asks for it without them stops with an error."));
    add(field(F(rollout.precision))
            .label("Rollout precision")
            .desc("With rollout.profile=simple: storage precision of the rollout engine's weights, activations, "
                  "residual stream and LM head (accumulation is always fp32); fp8_e4m3 / fp8_e5m2 mean W8A8 GEMMs "
                  "with bf16 activations. A precision different from train.precision is a source of mismatch. Refused "
                  "under a named profile, whose rounding points decide: set rollout.matmul_dtype there.")
            .names("actor_rollout_ref.rollout.dtype"));
    add(field(F(rollout.profile)).label("Rollout numerics").desc(kProfileDesc));
    add_points(
        "rollout", [](auto& c) -> auto& { return c.rollout; });
    add(field(F(rollout.kv_cache_dtype))
            .label("KV cache")
            .desc("How the rollout's KV cache stores keys and values: auto = as the activations; fp8_e4m3 / "
                  "fp8_e5m2 one byte per value with a scale per token and KV head (rollout.fp8_scale), as serving "
                  "engines' FP8 KV caches store them. The prompt's attention reads the cache's values too. The "
                  "trainer has no cache.")
            .names("actor_rollout_ref.rollout.kv_cache_dtype", "--kv-cache-dtype"));
    add(field(F(rollout.temperature))
            .label("Temperature")
            .range(0.05, 10, true, false)
            .desc("Sampling temperature T: p = softmax(logits / T).")
            .names("actor_rollout_ref.rollout.temperature", "--rollout-temperature", "temperature"));
    add(field(F(rollout.top_k))
            .label("Top-k")
            .range(0, 1000)
            .desc("Sample only from the k most likely tokens, renormalised; 0 = off.")
            .names("actor_rollout_ref.rollout.top_k", "--rollout-top-k", "top_k"));
    add(field(F(rollout.top_p))
            .label("Top-p")
            .range(0, 1, true, false)
            .desc("Nucleus sampling: keep the smallest set of most likely tokens whose probabilities sum to at "
                  "least p, renormalised; 1 = off.")
            .names("actor_rollout_ref.rollout.top_p", "--rollout-top-p", "top_p"));
    add(field(F(rollout.max_new_tokens))
            .label("Max new tokens")
            .range(1, 1024)
            .desc("Longest response the rollout may generate, environment tokens of a multi-turn task "
                  "included; a response also ends at its eos token.")
            .names("data.max_response_length", "--rollout-max-response-len", "max_completion_length"));
    add(field(F(rollout.max_batch))
            .label("Max sequences in flight")
            .range(0, 4096)
            .desc("Continuous batching: at most this many sequences decode at once; waiting ones are admitted "
                  "(prefilled) as others finish, so the decode batch size changes from step to step. "
                  "0 = all at once; the batch then only shrinks as sequences finish.")
            .names("actor_rollout_ref.rollout.max_num_seqs", "", ""));
    add(field(F(rollout.logprobs))
            .label("Rollout log-prob")
            .desc("Which rollout log-prob is used as lp_roll: processed = of the distribution actually sampled "
                  "from (after temperature/top-k/top-p); raw = of the unprocessed logits, ignoring them (the "
                  "classic pipeline bug that creates fake mismatch)."));

    section = "Kernels";
    add(field(F(kernels.batch_invariant))
            .label("Batch-invariant kernels")
            .desc("Kernels whose reduction order depends only on the reduced length, not on batch size, row "
                  "position or thread count. With train.precision = rollout.precision, training and rollout "
                  "log-probs agree bitwise (K3 KL exactly 0).")
            .names("", "--true-on-policy-mode (Miles, with equal precisions)"));
    add(field(F(train.device))
            .label("Training device")
            .desc("Where the training engine runs its forward and backward: cpu, or cuda (the first visible NVIDIA "
                  "GPU, as rollout.device). The optimizer steps the master weights on the host either way; the "
                  "gradients come back each step. cuda needs a build with the CUDA toolkit and a visible GPU."));
    add(field(F(train.precision))
            .label("Training precision")
            .desc("With train.profile=simple: storage precision of the training engine's weights, activations, "
                  "residual stream and LM head (accumulation is always fp32); set it equal to rollout.precision "
                  "to remove precision mismatch. fp8_e4m3 / fp8_e5m2: unified FP8 (W8A8 forward, as Miles' "
                  "unified FP8 training). Refused under a named profile, whose rounding points decide: set "
                  "train.matmul_dtype there."));
    add(field(F(train.profile)).label("Training numerics").desc(kProfileDesc));
    add_points(
        "train", [](auto& c) -> auto& { return c.train; });
    add(field(F(kernels.threads))
            .label("CPU threads")
            .range(0, 64)
            .desc("Worker threads of the CPU kernels; 0 = all cores. Batch-invariant kernels give the same bits "
                  "for any value."));

    section = "MoE & R3";
    add(field(F(moe.routing_replay))
            .label("Routing replay")
            .desc("R3 (rollout routing replay): the training engine's MoE layers use the experts the rollout "
                  "picked for each token, in the recompute and every mini-step. R2 (Qwen team): the mini-steps "
                  "after the first replay the experts the training engine itself chose in its old-policy forward "
                  "(the recompute), so the policy's drift cannot flip routes within a step; rollout-vs-training "
                  "flips remain. Either way the gate softmax runs over the training logits of the replayed "
                  "experts, so the router still learns. Needs model.kind=moe.")
            .names("router_replay.mode: R2 | R3", "--use-rollout-routing-replay"));

    section = "Policy loss";
    add(field(F(rl.estimator))
            .label("Advantage estimator")
            .desc("grpo: A = (r - mean of the prompt's group) / (std of the group + eps), the division only with "
                  "rl.grpo_std_norm; rloo: A = r - mean of the prompt's other samples; reinforce_baseline: "
                  "A = r - mean reward of the batch.")
            .names("algorithm.adv_estimator", "--advantage-estimator"));
    add(field(F(rl.grpo_std_norm))
            .label("GRPO std normalisation")
            .desc("grpo only: divide the group-centred reward by the group's standard deviation (off = Dr. GRPO "
                  "style, A = r - group mean).")
            .names("algorithm.norm_adv_by_std_in_grpo", "", "scale_rewards"));
    add(field(F(rl.loss))
            .label("Policy loss")
            .desc("ppo: loss_t = -w_t * min(ratio*A, clip(ratio, 1-eps_low, 1+eps_high)*A), ratio = "
                  "exp(lp_theta - lp_anchor); gspo: the same with the sequence ratio exp(mean_t(lp_theta - "
                  "lp_anchor)) and the gspo_eps range; reinforce: loss_t = -w_t * A * lp_theta.")
            .names("actor_rollout_ref.actor.policy_loss.loss_mode"));
    add(field(F(rl.eps_low))
            .label("Clip eps low")
            .range(0, 1)
            .desc("PPO clip range below 1: the ratio is clipped at 1 - eps_low.")
            .names("actor_rollout_ref.actor.clip_ratio_low", "--eps-clip", "epsilon"));
    add(field(F(rl.eps_high))
            .label("Clip eps high")
            .range(0, 10)
            .desc("PPO clip range above 1: the ratio is clipped at 1 + eps_high; clip-higher (R3 paper) uses "
                  "0.27 with eps_low 0.2.")
            .names("actor_rollout_ref.actor.clip_ratio_high", "--eps-clip-high", "epsilon_high"));
    add(field(F(rl.gspo_eps_low))
            .label("GSPO clip low")
            .range(0, 1)
            .desc("GSPO: the sequence ratio is clipped at 1 - gspo_eps_low (GSPO uses a tiny range, e.g. 3e-4)."));
    add(field(F(rl.gspo_eps_high))
            .label("GSPO clip high")
            .range(0, 10)
            .desc("GSPO: the sequence ratio is clipped at 1 + gspo_eps_high (e.g. 4e-4)."));
    add(field(F(rl.mini_steps))
            .label("Mini-steps")
            .range(1, 64)
            .desc("Optimizer steps per RL step: the batch is split into this many mini-batches, one AdamW step "
                  "each; after the first, the policy has moved away from the anchor (off-policy).")
            .names("data.train_batch_size / actor_rollout_ref.actor.ppo_mini_batch_size", "--num-steps-per-rollout"));
    add(field(F(rl.loss_agg))
            .label("Loss aggregation")
            .desc("token-mean: sum of token losses / number of valid tokens in the batch; seq-mean-token-mean: "
                  "mean over sequences of each sequence's token mean.")
            .names("actor_rollout_ref.actor.loss_agg_mode"));

    section = "Correction";
    add(field(F(rl.old_policy))
            .label("Old-policy mode")
            .desc("recompute: standard PPO, anchor = training recompute, no IS weights; bypass: anchor = rollout "
                  "log-probs, IS weights from lp_theta vs lp_roll; decoupled: anchor = training recompute, IS "
                  "weights from lp_old vs lp_roll (three policies).")
            .names("algorithm.rollout_correction.bypass_mode", "--use-rollout-logprobs (bypass)"));
    add(field(F(correction.is_level))
            .label("IS level")
            .desc("Importance weights from lr = lp_old - lp_roll: token w_t = exp(clamp(lr_t, -20, 20)); sequence "
                  "w = exp(clamp(sum_t lr_t)); geometric w = exp(clamp(mean_t lr_t)). off = no weights, mismatch "
                  "metrics only.")
            .names("algorithm.rollout_correction.rollout_is (null = off)", "tis_level (off: --get-mismatch-metrics)",
                   "rollout_importance_sampling_mode (level part; off: log_rollout_offpolicy_metrics)"));
    add(field(F(correction.is_mode))
            .label("IS mode")
            .desc("truncate: w = min(w, U); clip: w = clamp(w, L, U); mask: keep w but drop the tokens (or "
                  "sequences) with w outside [L, U] (IcePop).")
            .names("TIS (truncate) / IcePop (mask) presets", "tis_mode",
                   "rollout_importance_sampling_mode (token_truncate, token_mask, sequence_truncate, "
                   "sequence_mask)"));
    add(field(F(correction.is_lower))
            .label("IS lower bound L")
            .range(0, kInf)
            .desc("Lower bound L of clip and mask. 0 = default: L = 1/U for clip and mask (truncate has no lower "
                  "bound).")
            .names("algorithm.rollout_correction.rollout_is_threshold (lower of \"lo_hi\")",
                   "tis_lower_bound, --tis-clip-low"));
    add(field(F(correction.is_upper))
            .label("IS upper bound U")
            .range(0, kInf, true, false)
            .desc("Upper bound U of the importance weight (truncate: w = min(w, U)).")
            .names("algorithm.rollout_correction.rollout_is_threshold", "tis_upper_bound, --tis-clip",
                   "rollout_importance_sampling_threshold"));
    add(field(F(correction.rs_level))
            .label("Rejection level")
            .desc("Rejection sampling: mask out what falls outside [rs_lower, rs_upper]: token rho_t = exp(lr_t), "
                  "sequence exp(sum_t lr_t), geometric exp(mean_t lr_t); seq_mean_k3 drops sequences whose "
                  "mean_t(rho_t - 1 - lr_t) exceeds rs_upper. The batch keeps its shape.")
            .names("algorithm.rollout_correction.rollout_rs", "use_rs, rs_level"));
    add(field(F(correction.rs_lower))
            .label("Rejection lower bound")
            .range(0, kInf)
            .desc("Tokens or sequences whose ratio is below it are rejected (token, sequence, geometric levels); "
                  "0 = 1/rs_upper. Unused by seq_mean_k3.")
            .names("algorithm.rollout_correction.rollout_rs_threshold (lower)", "rs_lower_bound"));
    add(field(F(correction.rs_upper))
            .label("Rejection upper bound")
            .range(0, kInf, true, false)
            .desc("Tokens or sequences whose ratio is above it are rejected; for seq_mean_k3 it is the K3 "
                  "threshold (e.g. 0.01).")
            .names("algorithm.rollout_correction.rollout_rs_threshold", "rs_upper_bound"));
    add(field(F(correction.veto_threshold))
            .label("Veto threshold")
            .range(0, 1)
            .desc("Drop a whole sequence if any of its tokens falls below this threshold (see "
                  "correction.veto_kind), e.g. 1e-4; 0 = off.")
            .names("(removed)", "rs_veto_threshold"));
    add(field(F(correction.veto_kind))
            .label("Veto test")
            .desc("ratio: rho = exp(lp_old - lp_roll) below the threshold (slime's code); old_prob: the token's "
                  "probability under the old policy, exp(lp_old), below the threshold (the Miles blog)."));
    add(field(F(correction.batch_normalize))
            .label("Batch-normalise weights")
            .desc("w <- w / mean(w), the mean taken over the batch's valid tokens (token level) or over its "
                  "sequences (sequence/geometric level), so the weights average 1.")
            .names("algorithm.rollout_correction.rollout_is_batch_normalize", "tis_batch_normalize"));

    section = "Optimizer";
    add(field(F(optim.lr))
            .label("Learning rate")
            .range(0, 1, true, false)
            .desc("AdamW learning rate of the RL phase (after warm-up).")
            .names("actor_rollout_ref.actor.optim.lr", "--lr", "learning_rate"));
    add(field(F(optim.warmup_steps))
            .label("Warm-up steps")
            .range(0, 100000)
            .desc("Linear learning-rate warm-up from 0 over this many RL steps; 0 = none.")
            .names("actor_rollout_ref.actor.optim.lr_warmup_steps", "--lr-warmup-iters", "warmup_steps"));
    add(field(F(optim.grad_clip))
            .label("Gradient clipping")
            .range(0, 1e6)
            .desc("Scale the gradients so their global L2 norm is at most this value; 0 = off.")
            .names("actor_rollout_ref.actor.grad_clip", "--clip-grad", "max_grad_norm"));
    add(field(F(optim.weight_decay))
            .label("Weight decay")
            .range(0, 1)
            .desc("Decoupled AdamW weight decay: theta <- theta - lr * weight_decay * theta.")
            .names("actor_rollout_ref.actor.optim.weight_decay", "--weight-decay", "weight_decay"));
    add(field(F(optim.beta1))
            .label("Adam beta1")
            .range(0, 1, false, true)
            .desc("Decay rate of AdamW's first-moment estimate: m <- beta1 * m + (1 - beta1) * g.")
            .names("actor_rollout_ref.actor.optim.betas[0]", "--adam-beta1", "adam_beta1"));
    add(field(F(optim.beta2))
            .label("Adam beta2")
            .range(0, 1, false, true)
            .desc("Decay rate of AdamW's second-moment estimate: v <- beta2 * v + (1 - beta2) * g^2.")
            .names("actor_rollout_ref.actor.optim.betas[1]", "--adam-beta2", "adam_beta2"));
    add(field(F(optim.eps))
            .label("Adam eps")
            .range(0, 1, true, false)
            .desc("Added to the denominator: step = lr * m_hat / (sqrt(v_hat) + eps).")
            .names("", "--adam-eps", "adam_epsilon"));

    section = "Base policy";
    add(field(F(base.sft_steps))
            .label("SFT steps")
            .range(0, 100000)
            .desc("Supervised warm-up steps on the task's reference answers before RL, so the base policy earns "
                  "some reward; 0 = start RL from random weights."));
    add(field(F(base.lr))
            .label("SFT learning rate")
            .range(0, 1, true, false)
            .desc("AdamW learning rate of the supervised warm-up."));
    add(field(F(base.batch_size)).label("SFT batch size").range(1, 1024).desc("Prompts per supervised warm-up step."));
    add(field(F(base.target_reward))
            .label("SFT target reward")
            .range(0, 1)
            .desc("The warm-up stops early once the held-out reward reaches this value, leaving room for RL; "
                  "1 = run all base.sft_steps unless every answer is right."));
    add(field(F(base.grow_from_layers))
            .label("Grow from layers")
            .range(0, 1024)
            .desc("Depth up-scaling of the warm-up: train a model of this many layers (the same width) to "
                  "base.target_reward, then grow it to model.num_layers by inserting fresh layers whose output "
                  "projections (o_proj, down_proj) are zero, so the grown model computes what the shallow one "
                  "did, and train the grown model on. A deep model's warm-up spends most of its steps on a "
                  "plateau a shallow one crosses at a fraction of the cost. 0 = auto; auto grows models of 8 "
                  "layers or more (the deep presets) from 2 and trains others at their own depth, directly. At "
                  "most model.num_layers; model.num_layers trains the model directly."));
    add(field(F(base.grow_steps))
            .label("Grown-model steps")
            .range(0, 100000)
            .desc("Steps the grown model trains before the held-out reward is checked against "
                  "base.target_reward again, so its fresh layers learn a part; within base.sft_steps in all."));
    add(field(F(base.grow_lr))
            .label("Grown-model learning rate")
            .range(0, 1, true, false)
            .desc("AdamW learning rate of the grown model: below base.lr, so the first steps of fresh moments "
                  "do not undo what the shallow model learned."));

    section = "Run";
    add(field(F(seed))
            .label("Seed")
            .range(0, kMaxSeed)
            .desc("Seeds the initial weights, the prompt stream and sampling: the same config with the same "
                  "seed reproduces a run."));
    add(field(F(rl.steps))
            .label("RL steps")
            .range(1, 100000)
            .desc("Number of RL steps (rollout, score, train) to run."));
    add(field(F(rl.prompts_per_step))
            .label("Prompts per step")
            .range(1, 256)
            .desc("Distinct prompts B per RL step.")
            .names("data.train_batch_size", "--rollout-batch-size"));
    add(field(F(rl.samples_per_prompt))
            .label("Samples per prompt")
            .range(1, 64)
            .desc("Responses n sampled per prompt (the GRPO/RLOO group size); one step trains on B x n sequences.")
            .names("actor_rollout_ref.rollout.n", "--n-samples-per-prompt", "num_generations"));
    add(field(F(run.checkpoint_every))
            .label("Checkpoint every")
            .range(1, 100000)
            .desc("Save a checkpoint (safetensors with Hugging Face names) every this many RL steps."));
    add(field(F(run.keep_last))
            .label("Keep last checkpoints")
            .range(1, 100000)
            .desc("Keep the newest this many checkpoints of a run and delete older ones (plus those kept by "
                  "run.keep_every), so a long run's disk use stays bounded.")
            .names("trainer.max_actor_ckpt_to_keep", "save_total_limit"));
    add(field(F(run.keep_every))
            .label("Also keep every")
            .range(0, 100000)
            .desc("Also keep the checkpoint of every step count that is a multiple of this (0: none), e.g. for "
                  "later analysis of a long run."));
    return t;
}
#undef F

}  // namespace

const std::vector<Entry>& entries() {
    static const std::vector<Entry> t = build_schema();
    return t;
}

const Entry* find_entry(std::string_view key) {
    for (const auto& e : entries())
        if (e.meta.key == key) return &e;
    return nullptr;
}

bool is_section_prefix(std::string_view prefix) {
    for (const auto& e : entries()) {
        const auto& k = e.meta.key;
        if (k.size() > prefix.size() && k.compare(0, prefix.size(), prefix) == 0 && k[prefix.size()] == '.')
            return true;
    }
    return false;
}

}  // namespace mlk::config_detail
