#include "widgets/panels/glossary.h"

#include <QLineEdit>
#include <QTextBrowser>
#include <QTextDocument>
#include <QVBoxLayout>

#include <algorithm>
#include <string_view>
#include <vector>

#include "core/metrics/catalogue.h"
#include "core/metrics/glossary.h"
#include "widgets/data/metric_help.h"
#include "widgets/data/qt_text.h"

namespace mlk {

Glossary::Glossary(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    search_ = new QLineEdit(this);
    search_->setObjectName(QStringLiteral("glossarySearch"));
    search_->setPlaceholderText(tr("Search terms and metrics (name, key, meaning, formula)"));
    search_->setClearButtonEnabled(true);
    page_ = new QTextBrowser(this);
    page_->setObjectName(QStringLiteral("glossaryPage"));
    page_->setOpenLinks(false);
    layout->addWidget(search_);
    layout->addWidget(page_, 1);
    connect(search_, &QLineEdit::textChanged, this, &Glossary::setFilter);
    render();
}

void Glossary::setFilter(const QString& text) {
    if (search_->text() != text) search_->setText(text);  // re-enters through textChanged
    else render();
}

QString Glossary::html() const { return page_->toHtml(); }

void Glossary::render() {
    const QString needle = search_->text().trimmed();
    const auto matches = [&](const QStringList& parts) {
        if (needle.isEmpty()) return true;
        for (const QString& p : parts)
            if (p.contains(needle, Qt::CaseInsensitive)) return true;
        return false;
    };
    QString html;
    shownTerms_ = shownMetrics_ = 0;
    QString terms;
    for (const GlossaryTerm& t : glossary_terms()) {
        if (!matches({qs(t.term), qs(t.definition), qs(t.see)})) continue;
        ++shownTerms_;
        terms += QStringLiteral("<p><b>%1</b><br>%2").arg(qs(t.term).toHtmlEscaped(), qs(t.definition).toHtmlEscaped());
        if (!t.see.empty()) terms += tr("<br><i>See:</i> <code>%1</code>").arg(qs(t.see).toHtmlEscaped());
        terms += QStringLiteral("</p>");
    }
    if (!terms.isEmpty()) html += tr("<h2>Key terms</h2>") + terms;
    // Metrics under their group, groups in catalogue order.
    std::vector<std::string_view> groups;
    for (const MetricInfo& m : metric_catalogue())
        if (std::find(groups.begin(), groups.end(), m.group) == groups.end()) groups.push_back(m.group);
    for (std::string_view group : groups) {
        QString entries;
        for (const MetricInfo& m : metric_catalogue()) {
            if (m.group != group) continue;
            if (!matches({qs(m.name), qs(m.title), qs(m.meaning), qs(m.formula), qs(m.group)})) continue;
            ++shownMetrics_;
            entries += metricHelpHtml(qs(m.name));
        }
        if (!entries.isEmpty()) html += tr("<h2>%1 metrics</h2>").arg(qs(group).toHtmlEscaped()) + entries;
    }
    if (html.isEmpty()) html = tr("<p>Nothing matches \u201c%1\u201d.</p>").arg(needle.toHtmlEscaped());
    page_->setHtml(html);
}

}  // namespace mlk
