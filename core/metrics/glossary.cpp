#include "core/metrics/glossary.h"

namespace mlk {

const std::vector<GlossaryTerm>& glossary_terms() {
    // clang-format off
    static const std::vector<GlossaryTerm> terms = {
        {"Training-inference mismatch",
         "The rollout engine (which samples responses) and the training engine (which computes the gradient) "
         "assign different probabilities to the same tokens, so on-policy RL is silently off-policy.", ""},
        {"K3 KL",
         "The estimator mean(rho - 1 - r) of KL(rollout || train) over the sampled tokens, with r = lp_train - "
         "lp_roll and rho = exp(r): never negative, and exactly 0 iff every log-prob agrees bit for bit.", "k3_kl"},
        {"F(t)",
         "The fraction of sampled tokens whose probability differs by more than a factor t between the engines "
         "(max(rho, 1/rho) > t); F(2) above 0.1 preceded collapse in the R3 paper.", "F@2"},
        {"Rounding point",
         "A place where an engine stores an intermediate narrower than it computed it (the residual stream, "
         "attention's P tile, norm statistics, the LM head); two engines that round at different places "
         "disagree even at the same precision.", "rollout.profile"},
        {"Numerics profile",
         "A named set of rounding points modelled on a real engine (vLLM, SGLang, FSDP, Megatron), chosen per "
         "side with rollout.profile and train.profile.", "rollout.profile"},
        {"Batch-invariant kernels",
         "Kernels whose reduction order never depends on the batch size or shape, so a token gets the same "
         "bits in the rollout batch and the training batch; with equal precision the two engines agree bitwise.",
         "kernels.batch_invariant"},
        {"FP8",
         "8-bit floating point (e4m3: 4 exponent, 3 mantissa bits) with per-channel or per-token scales, as "
         "serving engines quantise weights, activations or the KV cache; much coarser than bf16, so it raises "
         "the mismatch unless the trainer quantises the same way.", "rollout.precision"},
        {"Router flip",
         "In a mixture-of-experts layer, the rollout and the trainer pick a different top-k set of experts for "
         "the same token because tiny numeric differences reorder the router's scores.", "router_diff_token"},
        {"R3 (Rollout Routing Replay)",
         "The training engine replays the experts the rollout engine chose for each token, so router flips "
         "vanish and only rounding and reduction order remain.", "moe.routing_replay"},
        {"R2 (routing replay of the old policy)",
         "During off-policy mini-steps the trainer replays the routes its own old-policy forward chose (not the "
         "rollout's), so the mini-steps do not add router flips of their own.", "moe.routing_replay"},
        {"TIS (truncated importance sampling)",
         "Each token's loss is weighted by its ratio pi_train / pi_rollout truncated at an upper bound (e.g. 2), "
         "correcting the mismatch while capping the variance a large weight would add.", "correction.is_mode"},
        {"MIS (masked importance sampling)",
         "Sequences (or tokens) whose importance ratio leaves a band such as [0.5, 2] are masked out of the loss "
         "instead of being reweighted.", "correction.is_level"},
        {"Geometric rejection",
         "A sequence is rejected when the geometric mean of its token ratios, exp(mean_t r), leaves a tight band "
         "such as [0.999, 1.001]; length-fair, unlike the product over all tokens.", "correction.rs_level"},
        {"IcePop",
         "Token-level masking: tokens whose ratio lies outside [0.5, 5] are dropped from the gradient while the "
         "others keep their unclipped weight.", "correction.is_mode"},
        {"ESS (effective sample size)",
         "1 / mean((w / mean w)^2) over the importance weights: the share of the batch that still counts after "
         "weighting; 1 when all weights are equal.", "ess"},
        {"Processed vs raw log-probs",
         "The rollout's log-prob after temperature / top-k / top-p (processed) or of the raw logits; comparing "
         "the trainer's raw log-prob with a processed one creates fake mismatch.", "rollout.logprobs"},
    };
    // clang-format on
    return terms;
}

}  // namespace mlk
