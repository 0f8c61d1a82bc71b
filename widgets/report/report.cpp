// Assembles the report from its sections (report_builder.h) and writes it as
// HTML or PDF.
#include "widgets/report/report.h"

#include <QAbstractTextDocumentLayout>
#include <QApplication>
#include <QBuffer>
#include <QFont>
#include <QPageLayout>
#include <QPageSize>
#include <QPainter>
#include <QPdfWriter>
#include <QTextBlock>
#include <QTextLayout>
#include <QTextDocument>
#include <QTextFrame>

#include "core/config/atomic_file.h"
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

// Reports are written whole or not at all (core/config/atomic_file.h): a
// report exported again over last week's keeps it if this export fails.
void save_report_html(const Report& r, const std::string& path) {
    const QByteArray bytes = r.html.toUtf8();
    write_file_atomically(path, std::string_view(bytes.constData(), size_t(bytes.size())));
}

namespace {

// The block holding `anchor` (an <a name>), or an invalid block.
QTextBlock anchored_block(const QTextDocument& doc, const QString& anchor) {
    for (QTextBlock b = doc.begin(); b.isValid(); b = b.next())
        for (auto it = b.begin(); !it.atEnd(); ++it)
            if (it.fragment().charFormat().anchorNames().contains(anchor)) return b;
    return {};
}

// Lays `doc` out in pages of `device` with kPageMarginCm margins (the page in
// the device's pixels; the layout scales points and 96-dpi pixels to them).
void paginate(QTextDocument& doc, QPagedPaintDevice& device) {
    doc.documentLayout()->setPaintDevice(&device);
    const qreal margin = report_detail::kPageMarginCm / 2.54 * 96;  // in the document's 96-dpi pixels
    QTextFrameFormat fmt = doc.rootFrame()->frameFormat();
    fmt.setLeftMargin(margin);
    fmt.setRightMargin(margin);
    fmt.setTopMargin(margin);
    fmt.setBottomMargin(margin);
    doc.rootFrame()->setFrameFormat(fmt);
    doc.setPageSize(QSizeF(device.width(), device.height()));
}

// Starts a page before the charts heading where it would otherwise sit on
// one page and its first chart on the next. Otherwise the charts follow the
// summary on its page: a forced break left a page holding a summary's last
// row alone. `doc` is laid out (paginate) and stays so.
void keep_charts_heading_with_its_chart(QTextDocument& doc) {
    const QTextBlock heading = anchored_block(doc, QLatin1String(report_detail::kChartsAnchor));
    if (!heading.isValid()) return;
    QTextBlock chart = heading.next();
    while (chart.isValid() && !chart.text().contains(QChar::ObjectReplacementCharacter)) chart = chart.next();
    if (!chart.isValid()) return;
    // Where the lines are: pagination moves a line that would cross a page's
    // foot down inside its block, which the block's bounding rectangle does
    // not show.
    (void)doc.pageCount();  // lays out the whole document
    const auto line_top = [](const QTextBlock& b) {
        const QTextLayout* l = b.layout();
        return l->position().y() + (l->lineCount() ? l->lineAt(0).y() : 0.0);
    };
    const auto line_bottom = [](const QTextBlock& b) {
        const QTextLayout* l = b.layout();
        const int n = l->lineCount();
        return l->position().y() + (n ? l->lineAt(n - 1).y() + l->lineAt(n - 1).height() : 0.0);
    };
    const qreal page = doc.pageSize().height();
    if (int(line_top(heading) / page) == int((line_bottom(chart) - 1) / page)) return;
    QTextCursor at(heading);
    QTextBlockFormat f = at.blockFormat();
    f.setPageBreakPolicy(QTextFormat::PageBreak_AlwaysBefore);
    at.setBlockFormat(f);
}

// Paints the laid-out `doc` page by page, each page's number in its bottom
// margin under the right edge of the text, as QTextDocument::print does; but
// from this layout, where print would lay out a copy of its own.
void paint_pages(const QTextDocument& doc, QPdfWriter& w, const std::string& path) {
    QPainter p(&w);
    if (!p.isActive()) throw std::runtime_error("cannot write " + path + ": the PDF writer did not start");
    const QSizeF page = doc.pageSize();
    const qreal margin = report_detail::kPageMarginCm / 2.54 * w.logicalDpiY();
    const QFont number_font = doc.defaultFont();
    const int pages = doc.pageCount();
    for (int i = 0; i < pages; ++i) {
        if (i > 0) w.newPage();
        p.save();
        p.translate(0, -i * page.height());
        const QRectF view(0, i * page.height(), page.width(), page.height());
        QAbstractTextDocumentLayout::PaintContext ctx;
        ctx.clip = view;
        p.setClipRect(view);
        doc.documentLayout()->draw(&p, ctx);
        p.restore();
        p.setFont(QFont(number_font, &w));
        const QString n = QString::number(i + 1);
        const QFontMetricsF fm(p.font(), &w);
        p.drawText(QPointF(page.width() - margin - fm.horizontalAdvance(n),
                           page.height() - margin + fm.ascent() + 5 * w.logicalDpiY() / 72.0),
                   n);
    }
}

}  // namespace

void save_report_pdf(const Report& r, const std::string& path) {
    QTextDocument doc;
    QFont font(QStringLiteral("DejaVu Sans"));
    font.setPointSizeF(9);
    doc.setDefaultFont(font);
    doc.setHtml(r.pdf_html.isEmpty() ? r.html : r.pdf_html);
    QBuffer pdf;  // a few MB, written out whole once the last page is painted
    pdf.open(QIODevice::WriteOnly);
    {
        QPdfWriter w(&pdf);
        w.setPageSize(QPageSize(QPageSize::A4));
        w.setPageMargins(QMarginsF(0, 0, 0, 0), QPageLayout::Millimeter);  // the margins are the document's
        w.setResolution(300);
        w.setTitle(r.title);
        w.setCreator(QStringLiteral("Mismatch Lab ") + QStringLiteral(MLK_VERSION));
        for (const auto& a : r.attachments) w.addFileAttachment(qs(a.file_name), a.data, qs(a.mime));
        paginate(doc, w);
        keep_charts_heading_with_its_chart(doc);
        paint_pages(doc, w, path);  // its painter's end writes the PDF's trailer
    }
    write_file_atomically(path, std::string_view(pdf.data().constData(), size_t(pdf.data().size())));
}

void save_report(const Report& r, const std::string& path) {
    const QString p = qs(path).toLower();
    if (p.endsWith(QLatin1String(".pdf"))) save_report_pdf(r, path);
    else if (p.endsWith(QLatin1String(".html")) || p.endsWith(QLatin1String(".htm"))) save_report_html(r, path);
    else throw ReportInputError("--out: '" + path + "' must end in .html, .htm or .pdf");
}

}  // namespace mlk
