// Training-inference mismatch metrics, each with its formula beside its field
// of MismatchMetrics / RouterDiff below.
//
// Pure functions over flat arrays; no model code, no Qt.
//
// Data layout shared by metrics, correction, advantage and policy loss:
//   * a batch of S sequences; the response tokens of all sequences are
//     concatenated into one array of N tokens;
//   * seq_offsets has S+1 entries, seq_offsets[0] == 0, non-decreasing,
//     seq_offsets[S] == N; sequence i owns tokens [seq_offsets[i], seq_offsets[i+1]);
//   * valid[t] != 0 says token t counts (a sequence may have no valid token).
//
// Conventions:
//   * inputs are float log-probs, every sum and mean is taken in double and
//     every metric is returned as double;
//   * "per sequence" means only skip sequences without a valid token (they do
//     not enter the denominator);
//   * when the batch has no valid token at all, every metric is 0 (and the
//     F(t) curve is all zeros on its grid): never NaN from a 0/0.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace mlk {

// clamp(x, -20, 20): the exponent guard used for weights and chi-squared.
inline double clamp20(double x) { return x < -20.0 ? -20.0 : (x > 20.0 ? 20.0 : x); }

// K3 term rho - 1 - r with rho = exp(r), computed so that it is exactly 0 iff
// r == 0 and strictly positive otherwise (a series for |r| < 1e-4 avoids the
// cancellation of expm1(r) - r; relative error below 1e-11 everywhere).
double k3_from_log_ratio(double r);

// Throws std::invalid_argument (message starts with `who`) unless seq_offsets
// describes n_tokens tokens as above and valid (if not empty) has n_tokens entries.
void check_token_layout(std::size_t n_tokens, std::span<const std::uint8_t> valid, std::span<const int> seq_offsets,
                        const char* who);

// chi2_seq flavour: verl exponentiates the per-sequence SUM of r; ms-swift the
// per-sequence MEAN of r (geometric mean of rho, comparable to chi2_token).
enum class Chi2SeqKind { sum, geometric };

struct MetricsOptions {
    Chi2SeqKind chi2_seq_kind = Chi2SeqKind::sum;  // which one `chi2_seq` reports
    int f_curve_points = 64;                       // >= 2
};

// The fixed thresholds at which F(t) is always logged.
inline constexpr double kFixedFThresholds[5] = {1.1, 1.5, 2.0, 5.0, 10.0};

// The F(t) curve grid: t_i = 1 + 1e-4 * ((1e4 - 1) / 1e-4)^(i / (n-1)),
// i = 0..n-1, i.e. log-spaced in (t - 1) from t = 1.0001 to t = 1e4. Spacing in
// (t - 1) rather than t keeps points where dense models live (|r| ~ 1e-4..1e-2)
// while still reaching the far tail.
std::vector<double> f_curve_grid(int points = 64);

// F(t) = fraction of valid tokens with max(rho, 1/rho) > t, i.e. |r| > ln t
// (R3 paper eq. 3), for each t in `thresholds` (each t >= 1). 0 without valid tokens.
std::vector<double> extreme_token_fraction(std::span<const float> lp_train, std::span<const float> lp_roll,
                                           std::span<const std::uint8_t> valid, std::span<const double> thresholds);

// Rollout-probability buckets, by decade of p = exp(lp_roll): bucket b holds
// the valid tokens with kProbBucketEdges[b] <= p < 10 * kProbBucketEdges[b]
// (the first also takes p = 1, the last is everything below 1e-4). Low-p
// tokens carry most of the mismatch ("When Speed Kills Stability"), so the
// split says whether a step's K3 comes from the tail or from the bulk.
inline constexpr int kProbBuckets = 5;
inline constexpr double kProbBucketEdges[kProbBuckets] = {1e-1, 1e-2, 1e-3, 1e-4, 0.0};
int prob_bucket(float lp_roll);  // index into kProbBucketEdges

struct ProbBucket {
    std::size_t count = 0;     // valid tokens in the bucket
    double frac = 0;           // count / valid tokens
    double abs_diff_mean = 0;  // mean |r| over the bucket (0 when empty)
    double k3_share = 0;       // sum of the bucket's K3 terms / sum over every valid token (0/0 = 0)
};

struct MismatchMetrics {
    std::size_t num_valid_tokens = 0;
    std::size_t num_sequences = 0;  // sequences with >= 1 valid token

    // token-level, means over valid tokens of the batch; r = lp_train - lp_roll
    double k3_kl = 0;               // mean(rho - 1 - r), unclamped
    double kl = 0;                  // k1: mean(lp_roll - lp_train)
    double logp_abs_diff_mean = 0;  // mean |r|
    double logp_abs_diff_max = 0;   // max |r|
    double chi2_token = 0;          // mean(exp(2 clamp20(r))) - 1
    // Total variation from the sampled token: E_{y~roll} 0.5|1 - p_train(y)/p_roll(y)| =
    // 0.5 sum_y |p_roll(y) - p_train(y)|, so the mean is an unbiased estimate of the
    // per-position TV. TV bounds the bias of an uncorrected estimate, chi2 the IS variance.
    double tv_token = 0;  // mean(0.5 |1 - exp(clamp20(r))|)
    ProbBucket buckets[kProbBuckets];

    // F(t) at t = 1.1, 1.5, 2, 5, 10 (kFixedFThresholds)
    double f_1_1 = 0, f_1_5 = 0, f_2 = 0, f_5 = 0, f_10 = 0;
    std::vector<double> f_grid;   // f_curve_grid(options.f_curve_points)
    std::vector<double> f_curve;  // F(f_grid[i])

    // per-sequence (sequences with >= 1 valid token)
    double chi2_seq = 0;            // the flavour chosen by MetricsOptions
    double chi2_seq_sum = 0;        // mean_i exp(2 clamp20(sum_t r)) - 1   (verl)
    double chi2_seq_geometric = 0;  // mean_i exp(2 clamp20(mean_t r)) - 1  (ms-swift)
    // The same estimator on whole responses: prod_t rho_t is the sequence ratio,
    // so this estimates the TV between the two engines' response distributions,
    // which bounds the bias of any sequence-level objective left uncorrected
    // (|E_roll f - E_train f| <= 2 TV max|f|); it grows ~T times tv_token.
    double tv_seq = 0;            // mean_i 0.5 |1 - exp(clamp20(sum_t r))|
    double training_ppl = 0;      // mean_i exp(-mean_t lp_train)
    double rollout_ppl = 0;       // mean_i exp(-mean_t lp_roll)
    double training_log_ppl = 0;  // mean_i (-mean_t lp_train)
    double rollout_log_ppl = 0;   // mean_i (-mean_t lp_roll)
    double log_ppl_diff = 0;      // mean_i (mean_t lp_roll - mean_t lp_train)
    double log_ppl_abs_diff = 0;  // mean_i |...|
    double log_ppl_diff_max = 0;  // max_i
    double log_ppl_diff_min = 0;  // min_i
    double ppl_ratio = 0;         // mean_i exp(seq log_ppl_diff) = PPL_train / PPL_roll
};

// Entropy is not computed here (it needs the full distribution): the training
// engine reports it separately.
MismatchMetrics mismatch_metrics(std::span<const float> lp_train, std::span<const float> lp_roll,
                                 std::span<const std::uint8_t> valid, std::span<const int> seq_offsets,
                                 const MetricsOptions& options = {});

// ---------------------------------------------------------------------------
// Router diff (R3 paper §3.2).
//
// rollout_ids / train_ids: num_tokens * layers * k expert ids, layout
// [token][layer][slot]. For (token, layer), d = number of rollout top-k experts
// that are not in the training top-k set (0..k; order inside the top-k does not
// matter). Tokens are delimited by seq_offsets (prompt tokens may be included
// by the caller); statistics use the valid tokens only.
struct RouterDiff {
    std::size_t num_valid_tokens = 0;
    std::size_t num_sequences = 0;               // sequences with >= 1 valid token
    double router_level = 0;                     // fraction of valid (token, layer) with d > 0
    double token_level = 0;                      // fraction of valid tokens with d > 0 in >= 1 layer
    double sequence_level = 0;                   // mean_i of (mean over valid tokens of sum_l d)
    double mean_diff_per_token = 0;              // mean over valid tokens of sum_l d (token weighted)
    std::vector<std::uint64_t> histogram;        // k+1 bins: count of valid (token, layer) with d
    std::vector<std::uint64_t> token_histogram;  // layers*k+1 bins: count of valid tokens by sum_l d
    std::vector<int> per_token_sum;              // num_tokens: sum_l d, for EVERY token (UI marks flips)
    std::vector<double> per_sequence_mean;       // S: mean over valid tokens of sum_l d (0 if none)
};

RouterDiff router_diff(std::span<const std::int32_t> rollout_ids, std::span<const std::int32_t> train_ids,
                       std::span<const std::uint8_t> valid_token_mask, std::size_t num_tokens, int layers, int k,
                       std::span<const int> seq_offsets);

}  // namespace mlk
