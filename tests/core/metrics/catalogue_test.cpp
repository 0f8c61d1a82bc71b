// The metric catalogue and the one run-statistics routine.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include "core/metrics/catalogue.h"
#include "core/metrics/glossary.h"
#include "core/metrics/run_stats.h"

using namespace mlk;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

TEST(Catalogue, NamesAndFieldsAreUniqueAndEveryRowIsDescribed) {
    std::set<std::string_view> names;
    std::set<size_t> fields;  // offsets of the StepMetrics fields
    const StepMetrics probe;
    for (const MetricInfo& m : metric_catalogue()) {
        EXPECT_TRUE(names.insert(m.name).second) << m.name << " twice";
        const size_t offset = reinterpret_cast<const char*>(&(probe.*m.field)) - reinterpret_cast<const char*>(&probe);
        EXPECT_TRUE(fields.insert(offset).second) << m.name << " shares a StepMetrics field";
        EXPECT_FALSE(m.title.empty()) << m.name;
        EXPECT_FALSE(m.meaning.empty()) << m.name;
        EXPECT_FALSE(m.group.empty()) << m.name;
    }
    // Every field of StepMetrics has a row: the struct holds only doubles.
    EXPECT_EQ(fields.size(), sizeof(StepMetrics) / sizeof(double));
}

TEST(Catalogue, NamedValuesWalkTheCatalogueInOrder) {
    StepMetrics v;
    v.k3_kl = 0.25;
    v.f_2 = 0.5;
    const auto named = to_named_values(v);
    ASSERT_EQ(named.size(), metric_catalogue().size());
    for (size_t i = 0; i < named.size(); ++i) EXPECT_EQ(named[i].first, metric_catalogue()[i].name);
    for (const auto& [name, value] : named) {
        if (name == "k3_kl") EXPECT_EQ(value, 0.25);
        else if (name == "F@2") EXPECT_EQ(value, 0.5);
        else EXPECT_TRUE(std::isnan(value)) << name << " is unset, so NaN";
    }
}

TEST(Catalogue, KeyChartsAndOrdering) {
    EXPECT_EQ(key_metric_names(), (std::vector<std::string>{"reward_mean", "k3_kl", "F@2", "grad_norm"}));
    EXPECT_EQ(order_metric_names({"zeta", "grad_norm", "alpha", "reward_mean", "grad_norm"}),
              (std::vector<std::string>{"reward_mean", "grad_norm", "alpha", "zeta"}));
    EXPECT_EQ(find_metric("k3_kl")->axis, Axis::log);
    EXPECT_EQ(find_metric("k3_kl")->better, Better::lower);
    EXPECT_EQ(find_metric("nope"), nullptr);
    EXPECT_TRUE(metric_is_timing("train_ms"));
    EXPECT_FALSE(metric_is_timing("k3_kl"));
    EXPECT_FALSE(metric_is_nonnegative(*find_metric("kl")));
    EXPECT_TRUE(metric_is_nonnegative(*find_metric("F@2")));
}

TEST(Catalogue, EveryProbabilityBucketMetricIsARowWithItsOwnField) {
    std::set<std::string_view> seen;
    for (const ProbBucketMetricNames& b : kProbBucketMetrics)
        for (std::string_view name : {b.frac, b.abs_diff, b.k3_share}) {
            const MetricInfo* m = find_metric(name);
            ASSERT_NE(m, nullptr) << name;
            EXPECT_TRUE(seen.insert(name).second) << name;
            EXPECT_EQ(m->group, "Mismatch") << name;
            EXPECT_FALSE(m->formula.empty()) << name;
        }
    EXPECT_EQ(seen.size(), 15u);
    EXPECT_EQ(find_metric("lowp_k3_share@0")->kind, MetricKind::fraction);
    EXPECT_EQ(find_metric("tv_token")->better, Better::lower);
    EXPECT_NE(find_metric("tv_seq"), nullptr);
}

TEST(RunStats, BestFollowsTheDirectionAndSkipsNonFinite) {
    const std::vector<MetricPoint> s = {{0, 3.0}, {1, kNaN}, {2, 1.0}, {3, kInf}, {4, 5.0}, {5, 2.0}};
    const RunStats lo = run_stats(s, Better::lower, 3);
    EXPECT_EQ(lo.best, 1.0);
    EXPECT_EQ(lo.best_step, 2);
    EXPECT_EQ(lo.final_value, 2.0);
    EXPECT_EQ(lo.final_step, 5);
    EXPECT_EQ(lo.nan_count, 1);
    EXPECT_EQ(lo.inf_count, 1);
    EXPECT_EQ(lo.last_n, 3);
    EXPECT_EQ(lo.last_n_finite, 2);
    EXPECT_DOUBLE_EQ(lo.mean_last, 3.5);
    const RunStats hi = run_stats(s, Better::higher, 3);
    EXPECT_EQ(hi.best, 5.0);
    EXPECT_EQ(hi.best_step, 4);
    const RunStats none = run_stats(s, Better::none, 3);
    EXPECT_TRUE(std::isnan(none.best));
    EXPECT_EQ(none.best_step, -1);
    // By name: the catalogue gives the direction (k3_kl: lower).
    EXPECT_EQ(run_stats(s, "k3_kl", 3).best, 1.0);
    EXPECT_EQ(run_stats(s, "reward_mean", 3).best, 5.0);
}

TEST(RunStats, EmptyAndAllNonFinite) {
    const RunStats e = run_stats(std::vector<MetricPoint>{}, Better::lower);
    EXPECT_EQ(e.count, 0);
    EXPECT_TRUE(std::isnan(e.final_value));
    EXPECT_TRUE(std::isnan(e.mean_last));
    const RunStats n = run_stats(std::vector<MetricPoint>{{0, kNaN}, {1, -kInf}}, Better::higher);
    EXPECT_TRUE(std::isnan(n.best));
    EXPECT_EQ(n.final_value, -kInf);
    EXPECT_EQ(n.nonfinite(), 2);
    EXPECT_TRUE(std::isnan(n.mean_last));
}

TEST(RunStats, ValueTextIsOneFormat) {
    EXPECT_EQ(value_text(kNaN), "NaN");
    EXPECT_EQ(value_text(kInf), "inf");
    EXPECT_EQ(value_text(-kInf), "-inf");
    EXPECT_EQ(value_text(0.000123456789), "0.00012346");
    EXPECT_EQ(value_text(2.0), "2");
}

}  // namespace

// Every metric the workbench shows carries its explanation (tooltips, the
// glossary): a row without one would show an empty tooltip.
TEST(Catalogue, EveryMetricHasAMeaningAndAFormula) {
    for (const MetricInfo& m : metric_catalogue()) {
        EXPECT_FALSE(m.title.empty()) << m.name;
        EXPECT_FALSE(m.meaning.empty()) << m.name;
        EXPECT_FALSE(m.formula.empty()) << m.name;
        EXPECT_FALSE(m.group.empty()) << m.name;
    }
}

TEST(Glossary, NamesTheKeyTermsOnceEachWithADefinition) {
    std::set<std::string_view> terms;
    for (const GlossaryTerm& t : glossary_terms()) {
        EXPECT_TRUE(terms.insert(t.term).second) << t.term;
        EXPECT_GT(t.definition.size(), 40u) << t.term;
        // A "see" names a metric or a setting that exists.
        if (!t.see.empty() && t.see.find('.') == std::string_view::npos) {
            EXPECT_NE(find_metric(t.see), nullptr) << t.see;
        }
    }
    for (std::string_view must :
         {"K3 KL", "F(t)", "TIS (truncated importance sampling)", "MIS (masked importance sampling)",
          "Geometric rejection", "IcePop", "R3 (Rollout Routing Replay)", "R2 (routing replay of the old policy)",
          "Batch-invariant kernels", "Rounding point", "Numerics profile", "FP8"})
        EXPECT_TRUE(terms.count(must)) << must;
}
