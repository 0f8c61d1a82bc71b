#include "widgets/data/metric_help.h"

#include <QObject>

#include "core/metrics/catalogue.h"

namespace mlk {

namespace {

QString text(std::string_view s) { return QString::fromUtf8(s.data(), qsizetype(s.size())); }

}  // namespace

QString metricTitle(const QString& name) {
    const MetricInfo* info = find_metric(name.toStdString());
    return info ? text(info->title) : name;
}

QString metricDirectionText(const MetricInfo& info) {
    switch (info.better) {
        case Better::lower: return QObject::tr("lower is better");
        case Better::higher: return QObject::tr("higher is better");
        case Better::none: break;
    }
    return QObject::tr("no good direction by itself: read it beside the others");
}

QString metricHelpHtml(const QString& name) {
    const MetricInfo* info = find_metric(name.toStdString());
    if (!info)
        return QObject::tr("<p><b>%1</b><br>Not in this version's metric catalogue (stored by another version).</p>")
            .arg(name.toHtmlEscaped());
    QString html =
        QStringLiteral("<p><b>%1</b> &nbsp;<code>%2</code><br>%3")
            .arg(text(info->title).toHtmlEscaped(), name.toHtmlEscaped(), text(info->meaning).toHtmlEscaped());
    if (!info->formula.empty())
        html += QObject::tr("<br><i>Formula:</i> <code>%1</code>").arg(text(info->formula).toHtmlEscaped());
    html += QObject::tr("<br><i>Good:</i> %1").arg(metricDirectionText(*info));
    if (!info->unit.empty()) html += QObject::tr(" &nbsp; <i>Unit:</i> %1").arg(text(info->unit).toHtmlEscaped());
    return html + QStringLiteral("</p>");
}

QString metricToolTip(const QString& name, const QString& lead) {
    // <qt>: Qt wraps a rich-text tooltip instead of showing one endless line.
    const QString first = lead.isEmpty() ? QString() : QStringLiteral("<p>%1</p>").arg(lead.toHtmlEscaped());
    return QStringLiteral("<qt>") + first + metricHelpHtml(name) + QStringLiteral("</qt>");
}

}  // namespace mlk
