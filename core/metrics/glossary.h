// The words a student meets before the metrics make sense: K3 KL, F(t), the
// corrections (TIS, MIS, geometric rejection, IcePop), routing replay (R2,
// R3), batch-invariant kernels, rounding points, numerics profiles, FP8. One
// sentence each; the glossary window lists them beside the metric catalogue
// (catalogue.h), which defines every metric.
#pragma once

#include <string_view>
#include <vector>

namespace mlk {

struct GlossaryTerm {
    std::string_view term;        // as the workbench writes it: "K3 KL"
    std::string_view definition;  // one sentence
    std::string_view see;         // a metric name or setting key to look at; "" when none
};

// In reading order: the measures, then what makes engines disagree, then the
// cures.
const std::vector<GlossaryTerm>& glossary_terms();

}  // namespace mlk
