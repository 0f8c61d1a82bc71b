// MainWindow, what helps someone learn with it: Help > User guide (the
// guide, docs/guide.md, from the program's resources), Help > Glossary (the
// key terms and every metric), the Probe dock (change a setting, see the
// mismatch of one batch about a second later, against the previous probe),
// and View > Presentation mode (larger text, thicker chart lines for a
// projector). Kept apart from main_window.cpp so the wiring is in one place.
#include <QAction>
#include <QApplication>
#include <QDockWidget>
#include <QMenuBar>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QSignalBlocker>

#include "app/gui/main_window.h"
#include "widgets/charts/chart_style.h"
#include "widgets/panels/config_form.h"
#include "widgets/panels/glossary.h"
#include "widgets/panels/guide_window.h"
#include "widgets/panels/probe_panel.h"

// The resources (resources/resources.qrc) live in the static mlk_gui
// library, whose linker keeps them only when asked for by name: registered
// here, the guide is there in every program that shows this window, not
// only in the one whose main() registers them.
static void registerResources() { Q_INIT_RESOURCE(resources); }

namespace mlk {

namespace {

QMenu* menuTitled(QMenuBar* bar, const QString& title) {
    for (QAction* a : bar->actions())
        if (a->menu() && a->text() == title) return a->menu();
    return bar->addMenu(title);
}

}  // namespace

void MainWindow::buildTeaching() {
    glossary_ = new Glossary(this);
    glossaryDock_ = new QDockWidget(tr("Glossary"), this);
    glossaryDock_->setObjectName("glossaryDock");
    glossaryDock_->setWidget(glossary_);
    addDockWidget(Qt::RightDockWidgetArea, glossaryDock_);
    glossaryDock_->hide();

    probe_ = new ProbePanel(this);
    probeDock_ = new QDockWidget(tr("Probe"), this);
    probeDock_->setObjectName("probeDock");
    // Scrolls rather than squeezes on a short screen (or in presentation mode).
    auto* scroll = new QScrollArea(this);
    scroll->setWidget(probe_);
    scroll->setWidgetResizable(true);
    // As wide as the panel needs (with every dock open the window still
    // fits), widened when a probe's numbers need more: a panel wider than
    // its dock is cut off at the right edge. A scroll bar, never a cut,
    // where the window cannot give the width.
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAsNeeded);
    const auto fitProbe = [this, scroll] {
        const int need = probe_->minimumSizeHint().width() + scroll->verticalScrollBar()->sizeHint().width() +
                         2 * scroll->frameWidth();
        if (scroll->minimumWidth() < need) scroll->setMinimumWidth(need);
    };
    fitProbe();
    connect(probe_, &ProbePanel::probed, this, fitProbe);
    probeDock_->setWidget(scroll);
    addDockWidget(Qt::RightDockWidgetArea, probeDock_);
    probeDock_->hide();
    // The probe experiments on the form's configuration: shown, it starts
    // from it, and a form edit starts it again from there (the probe's own
    // changes are what-ifs on top). Hidden, it costs nothing.
    const auto follow = [this] {
        if (probeDock_->isVisible() && form_->isValid()) probe_->setConfig(form_->config());
    };
    connect(probeDock_, &QDockWidget::visibilityChanged, this, [this, follow](bool visible) {
        if (!visible || !probe_->current().summary.is_null()) return;
        resizeDocks({probeDock_}, {460}, Qt::Horizontal);  // the numbers' table unelided
        follow();
    });
    connect(form_, &ConfigForm::configChanged, this, follow);

    QMenu* view = menuTitled(menuBar(), tr("&View"));
    view->addAction(probeDock_->toggleViewAction());
    probeDock_->toggleViewAction()->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_B));
    view->addSeparator();
    presentationAct_ = view->addAction(tr("Presentation mode"));
    presentationAct_->setCheckable(true);
    presentationAct_->setShortcut(QKeySequence(Qt::Key_F11));
    presentationAct_->setToolTip(tr("Larger text and thicker chart lines for a projector (F11)"));
    connect(presentationAct_, &QAction::toggled, this, &MainWindow::setPresentationMode);

    QMenu* help = menuTitled(menuBar(), tr("&Help"));
    QAction* glossary = glossaryDock_->toggleViewAction();
    glossary->setText(tr("&Glossary"));
    glossary->setShortcut(QKeySequence::HelpContents);
    help->insertAction(help->actions().isEmpty() ? nullptr : help->actions().front(), glossary);
    // The guide first. F1 stays the glossary's; the guide is Alt+H, U.
    QAction* guide = new QAction(tr("&User guide"), this);
    guide->setToolTip(tr("How to use the workbench, in a window beside it"));
    connect(guide, &QAction::triggered, this, [this] {
        // One window, made on first use and kept (with its place in the
        // guide) when closed; never modal, so the workbench stays usable.
        auto* window = findChild<GuideWindow*>();
        if (!window) {
            registerResources();
            window = new GuideWindow(QUrl(QStringLiteral("qrc:/docs/guide.md")), this);
        }
        window->show();
        window->raise();
        window->activateWindow();
    });
    help->insertAction(glossary, guide);

    setPresentationMode(QSettings().value("view/presentation", false).toBool());
}

void MainWindow::setPresentationMode(bool on) {
    // The application font as it was before presentation mode, to go back to.
    static const QFont normal = QApplication::font();
    {
        const QSignalBlocker block(presentationAct_);
        presentationAct_->setChecked(on);
    }
    QFont font = normal;
    if (on && font.pointSizeF() > 0) font.setPointSizeF(font.pointSizeF() * ChartStyle::kPresentationFontScale);
    QApplication::setFont(font);
    // A widget with a style sheet (the configuration form) keeps the font it
    // was polished with: polish it again.
    for (QWidget* w : findChildren<QWidget*>())
        if (!w->styleSheet().isEmpty()) w->setStyleSheet(w->styleSheet());
    ChartStyle::instance().setPresentation(on);
    QSettings().setValue("view/presentation", on);
}

bool MainWindow::presentationMode() const { return ChartStyle::instance().presentation(); }

}  // namespace mlk
