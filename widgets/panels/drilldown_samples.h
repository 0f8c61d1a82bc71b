// The drill-down's "Samples" view (drilldown.h, (d)): each text sample's
// prompt, reward and response token by token, every token's background its
// |lp_train - lp_roll|, router flips underlined with a superscript count, a
// tooltip with both log-probs. Each token links to "tok:<n>", picks[n]
// saying which token it is, for "why this token?" (token_why.h).
#pragma once

#include <vector>

#include <QString>

#include "core/store/store.h"
#include "widgets/panels/token_why.h"

namespace mlk {

// samplesPerPrompt: the run's rl.samples_per_prompt (sample i is sequence
// i * samplesPerPrompt of the batch); noneNote: what to say when ts is empty.
QString samplesHtml(const std::vector<TextSample>& ts, int samplesPerPrompt, std::vector<TokenPick>& picks,
                    const QString& noneNote);

}  // namespace mlk
