#include "widgets/panels/guide_window.h"

#include <QFile>
#include <QFileInfo>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QHash>
#include <QLabel>
#include <QLineEdit>
#include <QScreen>
#include <QScrollBar>
#include <QShortcut>
#include <QTextBlock>
#include <QTextCursor>
#include <QToolButton>
#include <QVBoxLayout>

namespace mlk {

namespace {

bool isMarkdown(const QUrl& url) {
    const QString path = url.path();
    return path.endsWith(QLatin1String(".md"), Qt::CaseInsensitive) ||
           path.endsWith(QLatin1String(".markdown"), Qt::CaseInsensitive);
}

// Marks every heading of `doc` as an anchor named as GitHub names it; a
// repeated heading gets "-1", "-2", ... as there. Setting the same names
// again is harmless, so a page can be marked on every load.
void markHeadings(QTextDocument* doc) {
    QHash<QString, int> seen;
    QTextCursor cursor(doc);
    for (QTextBlock b = doc->begin(); b.isValid(); b = b.next()) {
        if (b.blockFormat().headingLevel() == 0 || b.length() <= 1) continue;
        QString name = headingAnchor(b.text());
        const int n = seen.value(name, 0);
        seen.insert(name, n + 1);
        if (n > 0) name += QLatin1Char('-') + QString::number(n);
        cursor.setPosition(b.position());
        cursor.setPosition(b.position() + b.length() - 1, QTextCursor::KeepAnchor);
        QTextCharFormat f;
        f.setAnchor(true);
        f.setAnchorNames({name});
        cursor.mergeCharFormat(f);
    }
}

// A page the window can show: an embedded resource or a local file that is there.
bool pageExists(const QUrl& url) {
    if (url.scheme() == QLatin1String("qrc")) return QFile::exists(QLatin1Char(':') + url.path());
    return url.isLocalFile() && QFileInfo(url.toLocalFile()).isFile();
}

}  // namespace

QString headingAnchor(const QString& heading) {
    QString out;
    for (const QChar ch : heading.toLower()) {
        if (ch.isLetterOrNumber() || ch.isMark() || ch == QLatin1Char('-') || ch == QLatin1Char('_')) out += ch;
        else if (ch == QLatin1Char(' ')) out += QLatin1Char('-');
    }
    return out;
}

void GuideBrowser::doSetSource(const QUrl& url, QTextDocument::ResourceType type) {
    QUrl page = url, current = source();
    page.setFragment({});
    current.setFragment({});
    if (page != current && !pageExists(page)) {
        emit followed(url, false);
        return;
    }
    if (type == QTextDocument::UnknownResource && isMarkdown(url)) type = QTextDocument::MarkdownResource;
    // Loading a page scrolls to the fragment before its headings are marked
    // (on sourceChanged, which going back also sends); marked, scroll again.
    QTextBrowser::doSetSource(url, type);
    if (url.hasFragment()) scrollToAnchor(url.fragment());
    emit followed(url, true);
}

GuideWindow::GuideWindow(const QUrl& page, QWidget* parent) : QWidget(parent, Qt::Window), page_(page) {
    setObjectName(QStringLiteral("guideWindow"));
    setWindowTitle(tr("User guide \u2014 Mismatch Lab"));
    auto* layout = new QVBoxLayout(this);
    auto* bar = new QHBoxLayout;
    back_ = new QToolButton(this);
    back_->setText(tr("Back"));
    back_->setToolTip(tr("The page or place before the last link (Alt+Left)"));
    back_->setShortcut(QKeySequence::Back);
    back_->setEnabled(false);
    home_ = new QToolButton(this);
    home_->setText(tr("Contents"));
    home_->setToolTip(tr("The start of the guide"));
    find_ = new QLineEdit(this);
    find_->setObjectName(QStringLiteral("guideFind"));
    find_->setPlaceholderText(tr("Find in the guide (Ctrl+F; Enter or F3: next, Shift+F3: previous)"));
    find_->setClearButtonEnabled(true);
    bar->addWidget(back_);
    bar->addWidget(home_);
    bar->addWidget(find_, 1);
    layout->addLayout(bar);

    browser_ = new GuideBrowser(this);
    browser_->setObjectName(QStringLiteral("guidePage"));
    // Web links go to the desktop's browser; the guide's own links, to its
    // sections and to other embedded pages, are followed here.
    browser_->setOpenExternalLinks(true);
    browser_->document()->setDocumentMargin(12);
    layout->addWidget(browser_, 1);
    note_ = new QLabel(this);
    note_->setObjectName(QStringLiteral("guideNote"));
    note_->setWordWrap(true);
    note_->hide();
    layout->addWidget(note_);

    // A link to a page the program does not carry says so, rather than
    // showing an empty page.
    connect(browser_, &GuideBrowser::followed, this, [this](const QUrl& url, bool shown) {
        note_->setText(shown ? QString()
                             : tr("\u201c%1\u201d is not included with the program.")
                                   .arg(url.fileName().isEmpty() ? url.toString() : url.fileName()));
        note_->setVisible(!shown);
    });
    connect(browser_, &QTextBrowser::backwardAvailable, back_, &QWidget::setEnabled);
    // Every page shown, followed or gone back to, gets its headings' anchors.
    connect(browser_, &QTextBrowser::sourceChanged, this, [this] { markHeadings(browser_->document()); });
    connect(back_, &QToolButton::clicked, browser_, &QTextBrowser::backward);
    connect(home_, &QToolButton::clicked, this, [this] { browser_->setSource(page_); });
    // Typing searches from where the current match starts, so the match grows with the text.
    connect(find_, &QLineEdit::textChanged, this, [this] {
        QTextCursor c = browser_->textCursor();
        c.setPosition(c.selectionStart());
        browser_->setTextCursor(c);
        findNext();
    });
    connect(find_, &QLineEdit::returnPressed, this, [this] { findNext(); });
    auto* focusFind = new QShortcut(QKeySequence::Find, this);
    connect(focusFind, &QShortcut::activated, this, [this] {
        find_->setFocus();
        find_->selectAll();
    });
    connect(new QShortcut(QKeySequence::FindNext, this), &QShortcut::activated, this, [this] { findNext(); });
    connect(new QShortcut(QKeySequence::FindPrevious, this), &QShortcut::activated, this, [this] { findNext(true); });

    browser_->setSource(page_, QTextDocument::MarkdownResource);
    // A reading width and most of the screen's height, never past the screen.
    const QScreen* screen = parent ? parent->screen() : QGuiApplication::primaryScreen();
    const QRect avail = screen ? screen->availableGeometry() : QRect(0, 0, 1280, 800);
    resize(qMin(860, avail.width() * 9 / 10), qMin(960, avail.height() * 9 / 10));
}

QString GuideWindow::note() const { return note_->isHidden() ? QString() : note_->text(); }

bool GuideWindow::findNext(bool backward) {
    const QString text = find_->text();
    note_->hide();
    if (text.isEmpty()) return false;
    const QTextDocument::FindFlags flags = backward ? QTextDocument::FindBackward : QTextDocument::FindFlags();
    bool found = browser_->find(text, flags);
    if (!found) {
        QTextCursor wrap(browser_->document());
        wrap.movePosition(backward ? QTextCursor::End : QTextCursor::Start);
        const QTextCursor before = browser_->textCursor();
        browser_->setTextCursor(wrap);
        found = browser_->find(text, flags);
        if (!found) browser_->setTextCursor(before);
    }
    if (!found) {
        note_->setText(tr("\u201c%1\u201d is not in this page.").arg(text));
        note_->show();
        return false;
    }
    // find() scrolls only until the match is in view, which leaves it on the
    // bottom line; a third of the way down it is read with what follows.
    QScrollBar* bar = browser_->verticalScrollBar();
    bar->setValue(bar->value() + browser_->cursorRect().top() - browser_->viewport()->height() / 3);
    return true;
}

}  // namespace mlk
