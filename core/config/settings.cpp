#include "core/config/settings.h"

#include <cmath>

#include "core/config/number_text.h"

namespace mlk {

double effective_is_lower(const CorrectionSettings& s) {
    if (s.is_mode == IsMode::truncate) return 0.0;
    if (s.is_lower > 0.0) return s.is_lower;
    return s.is_upper > 0.0 ? 1.0 / s.is_upper : 0.0;
}

double effective_rs_lower(const CorrectionSettings& s) {
    if (s.rs_lower > 0.0) return s.rs_lower;
    return s.rs_upper > 0.0 ? 1.0 / s.rs_upper : 0.0;
}

std::vector<std::string> correction_rule_violations(const CorrectionSettings& k) {
    std::vector<std::string> errors;
    const auto n = [](double x) { return number_text(x); };
    bool finite = true;
    for (auto [v, key] : {std::pair{k.is_lower, "correction.is_lower"},
                          {k.is_upper, "correction.is_upper"},
                          {k.rs_lower, "correction.rs_lower"},
                          {k.rs_upper, "correction.rs_upper"},
                          {k.veto_threshold, "correction.veto_threshold"}})
        if (!std::isfinite(v)) {
            errors.push_back(std::string(key) + " must be a finite number (got " + n(v) + ")");
            finite = false;
        }
    if (!finite) return errors;
    if (k.is_upper <= 0.0) errors.push_back("correction.is_upper must be > 0 (got " + n(k.is_upper) + ")");
    if (k.is_lower < 0.0)
        errors.push_back("correction.is_lower must be >= 0 (0 = default) (got " + n(k.is_lower) + ")");
    if (k.rs_upper <= 0.0) errors.push_back("correction.rs_upper must be > 0 (got " + n(k.rs_upper) + ")");
    if (k.rs_lower < 0.0)
        errors.push_back("correction.rs_lower must be >= 0 (0 = default) (got " + n(k.rs_lower) + ")");
    if (k.veto_threshold < 0.0)
        errors.push_back("correction.veto_threshold must be >= 0 (0 = off) (got " + n(k.veto_threshold) + ")");
    if (k.veto_kind == VetoKind::old_prob && k.veto_threshold > 1.0)
        errors.push_back("correction.veto_threshold must be <= 1 with correction.veto_kind old_prob (got " +
                         n(k.veto_threshold) + ")");
    if (!errors.empty()) return errors;

    if (k.is_lower > 0 && k.is_lower > k.is_upper)
        errors.push_back("correction.is_lower (" + n(k.is_lower) + ") > correction.is_upper (" + n(k.is_upper) +
                         "): the lower IS bound must not exceed the upper bound");
    if (k.is_lower == 0 && k.is_mode != IsMode::truncate && 1.0 / k.is_upper > k.is_upper)
        errors.push_back("correction.is_upper (" + n(k.is_upper) +
                         ") < 1 with correction.is_mode=" + std::string(enum_name(k.is_mode)) +
                         ": the default correction.is_lower = 1/is_upper = " + n(1.0 / k.is_upper) +
                         " would exceed it; set correction.is_lower explicitly");
    if (k.rs_level != RsLevel::seq_mean_k3 && k.rs_lower > k.rs_upper)
        errors.push_back("correction.rs_lower (" + n(k.rs_lower) + ") > correction.rs_upper (" + n(k.rs_upper) +
                         "): the lower rejection bound must not exceed the upper bound");
    if (k.rs_level != RsLevel::seq_mean_k3 && k.rs_level != RsLevel::off && k.rs_lower == 0 &&
        1.0 / k.rs_upper > k.rs_upper)
        errors.push_back("correction.rs_upper (" + n(k.rs_upper) +
                         ") < 1 with correction.rs_lower=0: the default lower bound 1/rs_upper = " +
                         n(1.0 / k.rs_upper) + " would exceed it; set correction.rs_lower explicitly");
    return errors;
}

}  // namespace mlk
