#include "widgets/panels/lessons_panel.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QTextBrowser>
#include <QVBoxLayout>

#include "core/config/lessons.h"
#include "widgets/charts/flow_layout.h"
#include "widgets/data/metric_help.h"
#include "widgets/data/palette.h"

namespace mlk {

namespace {

QString html(const std::string& s) { return QString::fromStdString(s).toHtmlEscaped(); }

// A run as a student reads it: what it is, then how to make it by hand.
QString runLine(const LessonRun& r) {
    QString how = QString::fromStdString(r.preset);
    for (const std::string& s : r.set) how += QStringLiteral(" --set ") + QString::fromStdString(s);
    return QStringLiteral("<li>%1 <span style=\"color:%2\">(%3, %4 steps)</span></li>")
        .arg(html(r.label), palette::secondaryText().name(), how.toHtmlEscaped())
        .arg(r.steps);
}

}  // namespace

LessonsPanel::LessonsPanel(QWidget* parent) : QWidget(parent) {
    // Wide enough for a lesson's paragraphs and its longest change button.
    setMinimumWidth(300);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    list_ = new QListWidget(this);
    for (size_t i = 0; i < lessons().size(); ++i) {
        const QString title = QStringLiteral("%1. %2").arg(i + 1).arg(QString::fromStdString(lessons()[i].title));
        list_->addItem(title);
        list_->item(int(i))->setToolTip(title);
    }
    list_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    list_->setTextElideMode(Qt::ElideRight);
    // Every lesson in view without scrolling: the path is the point.
    list_->setFixedHeight(list_->sizeHintForRow(0) * list_->count() + 2 * list_->frameWidth() + 4);
    layout->addWidget(list_);

    page_ = new QTextBrowser(this);
    page_->setOpenLinks(false);
    layout->addWidget(page_, 1);

    read_ = new QLabel(this);
    read_->setWordWrap(true);
    read_->setStyleSheet(QStringLiteral("QLabel { color: %1; font-weight: bold; border-left: 4px solid %1; "
                                        "padding-left: 6px; }")
                             .arg(palette::lessonAccent().name()));
    read_->hide();
    layout->addWidget(read_);

    auto* buttons = new QHBoxLayout;
    run_ = new QPushButton(tr("Run experiment"), this);
    run_->setToolTip(
        tr("Queue this lesson's runs (finished runs of the same configuration in the open database "
           "are loaded instead), show them side by side and point at the chart to read"));
    run_->setDefault(true);
    probe_ = new QPushButton(tr("Probe this lesson"), this);
    probe_->setToolTip(tr("Open the probe with this lesson's settings: one batch, no training, about a second"));
    buttons->addWidget(run_);
    buttons->addWidget(probe_);
    buttons->addStretch(1);
    layout->addLayout(buttons);

    changes_ = new QWidget(this);
    auto* changesColumn = new QVBoxLayout(changes_);
    changesColumn->setContentsMargins(0, 0, 0, 0);
    changesColumn->addWidget(new QLabel(tr("Then, in the probe, one click each:"), changes_));
    // As many a row as fit, in order: the lesson's text keeps the height on
    // a short laptop screen (one a row would take four rows of it).
    changesLayout_ = new FlowLayout;
    changesColumn->addLayout(changesLayout_);
    layout->addWidget(changes_);

    status_ = new QLabel(this);
    status_->setWordWrap(true);
    status_->setStyleSheet(QStringLiteral("QLabel { color: %1; }").arg(palette::secondaryText().name()));
    layout->addWidget(status_);

    connect(list_, &QListWidget::currentRowChanged, this, [this](int row) {
        showLesson(row);
        emit lessonSelected(row);
    });
    connect(run_, &QPushButton::clicked, this, [this] {
        if (currentLesson() >= 0) emit runRequested(currentLesson());
    });
    connect(probe_, &QPushButton::clicked, this, [this] {
        if (currentLesson() >= 0) emit probeRequested(currentLesson());
    });
    selectLesson(0);
}

QSize LessonsPanel::sizeHint() const { return {kPreferredWidth, QWidget::sizeHint().height()}; }

int LessonsPanel::count() const { return list_->count(); }
int LessonsPanel::currentLesson() const { return list_->currentRow(); }
void LessonsPanel::selectLesson(int index) {
    if (index == list_->currentRow()) showLesson(index);
    list_->setCurrentRow(index);
}
const Lesson& LessonsPanel::lesson(int index) const { return lessons().at(static_cast<size_t>(index)); }

void LessonsPanel::showLesson(int index) {
    setReadHint({});
    setStatus({});
    for (QPushButton* b : changeButtons_) b->deleteLater();
    changeButtons_.clear();
    if (index < 0 || index >= count()) {
        page_->clear();
        return;
    }
    const Lesson& l = lesson(index);
    QString runs;
    for (const LessonRun& r : l.runs) runs += runLine(r);
    QStringList charts;
    for (const std::string& m : l.charts) charts << metricTitle(QString::fromStdString(m)).toHtmlEscaped();
    const QString muted = palette::secondaryText().name();
    page_->setHtml(QStringLiteral("<h3>%1. %2</h3><p><b>Question.</b> %3</p><p><b>What to look at.</b> %4</p>"
                                  "<p><b>Why.</b> %5</p><p style=\"color:%6\">Source: %7</p>"
                                  "<p><b>Runs</b></p><ul>%8</ul><p style=\"color:%6\">Charts: %9</p>")
                       .arg(index + 1)
                       .arg(html(l.title), html(l.question), html(l.look_at), html(l.explanation), muted,
                            html(l.source), runs, charts.join(QStringLiteral(", "))));
    probe_->setVisible(l.probe.has_value());
    changes_->setVisible(l.probe && !l.probe->changes.empty());
    if (!l.probe) return;
    for (const std::string& change : l.probe->changes) {
        const QString c = QString::fromStdString(change);
        auto* b = new QPushButton(c, changes_);
        b->setToolTip(
            tr("Change %1 in the probe and probe again; the previous numbers stay beside the new ones").arg(c));
        connect(b, &QPushButton::clicked, this, [this, index, c] { emit changeRequested(index, c); });
        changesLayout_->addWidget(b);
        changeButtons_.append(b);
    }
}

QString LessonsPanel::text() const { return page_->toPlainText(); }

void LessonsPanel::setReadHint(const QString& text) {
    read_->setText(text);
    read_->setVisible(!text.isEmpty());
}
QString LessonsPanel::readHint() const { return read_->text(); }
void LessonsPanel::setStatus(const QString& text) { status_->setText(text); }
QString LessonsPanel::status() const { return status_->text(); }

}  // namespace mlk
