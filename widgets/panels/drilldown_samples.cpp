// The drill-down's "Samples" view as HTML: prompt, reward and the response
// token by token (see drilldown.h, (d)). Split from drilldown.cpp to keep
// each file short.
#include "widgets/panels/drilldown_samples.h"

#include <cmath>
#include <limits>

#include <QObject>

#include <nlohmann/json.hpp>

#include "widgets/data/palette.h"
#include "widgets/data/qt_text.h"

namespace mlk {

namespace {

// 12 -> "¹²": full-size superscript glyphs stay readable where <sup> shrinks.
QString superscript(int n) {
    static const char16_t digits[] = {u'\u2070', u'\u00B9', u'\u00B2', u'\u00B3', u'\u2074',
                                      u'\u2075', u'\u2076', u'\u2077', u'\u2078', u'\u2079'};
    QString out;
    for (QChar c : QString::number(n)) out += QChar(digits[c.digitValue()]);
    return out;
}

QString tr(const char* s) { return QObject::tr(s); }

}  // namespace

QString samplesHtml(const std::vector<TextSample>& ts, int samplesPerPrompt, std::vector<TokenPick>& picks,
                    const QString& noneNote) {
    picks.clear();
    QString h;
    h += QStringLiteral("<html><body style='font-family:sans-serif'>");
    // legend
    h += QStringLiteral("<p style='margin:2px'><b>%1</b> ").arg(tr("|lp_train \u2212 lp_roll|:"));
    const double stops[] = {0, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1};
    const char* names[] = {"\u2264 1e-6", "1e-5", "1e-4", "1e-3", "0.01", "0.1", "\u2265 1"};
    for (int i = 0; i < 7; ++i) {
        const QColor c = palette::mismatchHeat(stops[i]);
        h += QStringLiteral("<span style='background-color:%1; color:%2; font-family:monospace'>&nbsp;%3&nbsp;</span> ")
                 .arg(c.name(), palette::inkOn(c).name(), QString::fromUtf8(names[i]));
    }
    h += QStringLiteral(
             " &nbsp; <span style='text-decoration:underline'>%1</span><span "
             "style='color:%3; font-weight:bold'>\u207F</span> = %2</p>")
             .arg(tr("token"), tr("n router flips (MoE)"), palette::routerFlip().name());
    h += QStringLiteral("<hr/>");

    if (ts.empty())
        h +=
            QStringLiteral("<p style='color:%2'>%1</p>").arg(noneNote.toHtmlEscaped(), palette::secondaryText().name());

    for (const TextSample& s : ts) {
        h += QStringLiteral("<p style='margin-top:8px; margin-bottom:2px'><b>%1</b> &nbsp; %2 <b>%3</b></p>")
                 .arg(tr("Sample %1").arg(s.idx), tr("reward"),
                      std::isfinite(s.reward) ? QString::number(s.reward, 'f', 2) : num(s.reward, 4));
        h += QStringLiteral(
                 "<p style='margin:2px'>%1 <span style='font-family:monospace; background-color:%3'>"
                 "%2</span></p>")
                 .arg(tr("Prompt:"), qs(s.prompt).toHtmlEscaped(), palette::codeBackground().name());
        nlohmann::json toks;
        bool ok = true;
        try {
            toks = nlohmann::json::parse(s.tokens_json.empty() ? std::string("[]") : s.tokens_json);
            ok = toks.is_array();
        } catch (const nlohmann::json::exception&) {
            ok = false;
        }
        h += QStringLiteral("<p style='margin:2px'>%1 <span style='font-family:monospace; font-size:14pt'>")
                 .arg(tr("Response:"));
        if (!ok || toks.empty()) {
            h += QStringLiteral("<span>%1</span></span>").arg(qs(s.response).toHtmlEscaped());
            if (!ok)
                h += QStringLiteral(" <span style='color:%2; font-size:9pt'>%1</span>")
                         .arg(tr("(per-token data unreadable)"), palette::errorTone().ink.name());
            h += QStringLiteral("</p>");
            continue;
        }
        int nFlipTokens = 0, pos = 0;
        double maxD = 0;
        for (const auto& t : toks) {
            auto numOf = [&](const char* k) {
                auto it = t.find(k);
                return it != t.end() && it->is_number() ? it->get<double>() : std::numeric_limits<double>::quiet_NaN();
            };
            const double lr = numOf("lp_roll"), lt = numOf("lp_train");
            const int flips = t.contains("flips") && t["flips"].is_number() ? t["flips"].get<int>() : 0;
            const QString text =
                t.contains("text") && t["text"].is_string() ? qs(t["text"].get<std::string>()) : QStringLiteral("?");
            // Tool output a multi-turn environment inserted: context, no mismatch of the policy's.
            const bool env = t.contains("env") && t["env"].is_boolean() && t["env"].get<bool>();
            const double d = std::abs(lt - lr);
            if (std::isfinite(d) && !env) maxD = std::max(maxD, d);
            const QColor bg = env ? palette::codeBackground() : palette::mismatchHeat(d);
            QString tip = tr("token \u201C%1\u201D (id %2)\nlp_roll = %3\nlp_train = %4\nlp_train \u2212 lp_roll = %5")
                              .arg(text)
                              .arg(t.contains("id") ? QString::fromStdString(t["id"].dump()) : QStringLiteral("?"))
                              .arg(num(lr, 8), num(lt, 8), num(lt - lr, 4));
            if (flips > 0) tip += tr("\nrouter flips: %1").arg(flips);
            if (env) tip += tr("\ninserted by the environment: excluded from the loss and every metric");
            QString style = QStringLiteral("background-color:%1; color:%2").arg(bg.name(), palette::inkOn(bg).name());
            if (env) style += QStringLiteral("; font-style:italic");
            if (flips > 0) style += QStringLiteral("; text-decoration:underline");
            QString shown = text.toHtmlEscaped();
            if (text == QLatin1String(" ")) shown = QStringLiteral("&#x2423;");
            // A link per token: clicking it asks "why this token?" (picks[n]).
            const int32_t id = t.contains("id") && t["id"].is_number_integer() ? t["id"].get<int32_t>() : -1;
            picks.push_back({s.idx * samplesPerPrompt, pos++, id, lr, lt, flips});
            h += QStringLiteral(
                     "<a href=\"tok:%4\" style='text-decoration:none'><span title=\"%1\" style='%2'>%3</span>")
                     .arg(tip.toHtmlEscaped(), style, shown)
                     .arg(picks.size() - 1);
            if (flips > 0) {
                ++nFlipTokens;
                h += QStringLiteral("<span class='flip' style='color:%2; font-weight:bold'>%1</span>")
                         .arg(superscript(flips), palette::routerFlip().name());
            }
            h += QStringLiteral("</a>&#x200A;");  // hair space between chips
        }
        h += QStringLiteral("</span></p><p style='margin:2px; color:%2; font-size:9pt'>%1</p>")
                 .arg(tr("%1 tokens \u00B7 max |\u0394 log p| = %2 \u00B7 %3 with router flips")
                          .arg(toks.size())
                          .arg(num(maxD, 3))
                          .arg(nFlipTokens),
                      palette::secondaryText().name());
    }
    h += QStringLiteral("</body></html>");
    return h;
}

}  // namespace mlk
