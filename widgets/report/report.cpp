// Assembles the report from its sections (report_builder.h) and writes it as
// HTML or PDF.
#include "widgets/report/report.h"

#include <QApplication>
#include <QFile>
#include <QFont>
#include <QPageLayout>
#include <QPageSize>
#include <QPdfWriter>
#include <QTextDocument>

#include "widgets/report/report_builder.h"

namespace mlk {

Report build_report(Store& store, const ReportRequest& req) {
    if (!qobject_cast<QApplication*>(QCoreApplication::instance()))
        throw std::runtime_error("build_report needs a QApplication (charts are drawn with Qt Charts)");
    report_detail::Builder b(store, req);
    b.resolve();
    b.attachments();
    QString body = b.head() + b.runs_section() + b.files_marker() + b.summary_section() + b.charts_section() +
                   b.drill_section() + b.config_section() + b.environment_section();
    if (req.appendix) body += b.appendix_section();
    return b.finish(std::move(body));
}

bool report_extension_ok(const std::string& path) {
    const QString p = qs(path).toLower();
    return p.endsWith(QLatin1String(".html")) || p.endsWith(QLatin1String(".htm")) || p.endsWith(QLatin1String(".pdf"));
}

void save_report_html(const Report& r, const std::string& path) {
    QFile f(qs(path));
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate))
        throw std::runtime_error("cannot write " + path + ": " + f.errorString().toStdString());
    const QByteArray bytes = r.html.toUtf8();
    if (f.write(bytes) != bytes.size() || !f.flush())
        throw std::runtime_error("cannot write " + path + ": " + f.errorString().toStdString());
}

void save_report_pdf(const Report& r, const std::string& path) {
    {
        QFile probe(qs(path));
        if (!probe.open(QIODevice::WriteOnly | QIODevice::Truncate))
            throw std::runtime_error("cannot write " + path + ": " + probe.errorString().toStdString());
    }
    QTextDocument doc;
    QFont font(QStringLiteral("DejaVu Sans"));
    font.setPointSizeF(9);
    doc.setDefaultFont(font);
    doc.setHtml(r.pdf_html.isEmpty() ? r.html : r.pdf_html);
    QPdfWriter w(qs(path));
    w.setPageSize(QPageSize(QPageSize::A4));
    w.setPageMargins(QMarginsF(0, 0, 0, 0), QPageLayout::Millimeter);  // QTextDocument::print adds 2 cm
    w.setResolution(300);
    w.setTitle(r.title);
    w.setCreator(QStringLiteral("Mismatch Lab ") + QStringLiteral(MLK_VERSION));
    for (const auto& a : r.attachments) w.addFileAttachment(qs(a.file_name), a.data, qs(a.mime));
    doc.print(&w);
}

void save_report(const Report& r, const std::string& path) {
    const QString p = qs(path).toLower();
    if (p.endsWith(QLatin1String(".pdf"))) save_report_pdf(r, path);
    else if (p.endsWith(QLatin1String(".html")) || p.endsWith(QLatin1String(".htm"))) save_report_html(r, path);
    else throw ReportInputError("--out: '" + path + "' must end in .html, .htm or .pdf");
}

}  // namespace mlk
