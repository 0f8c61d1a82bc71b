// Help > User guide (main_window_teach.cpp, widgets/panels/guide_window.h):
// the action opens one non-modal window showing the guide embedded in the
// program, and in that window the page's links to its own sections scroll
// there, links to other pages open them when they are there and say so when
// not, web links go to the desktop's browser, and the find field finds.
// MLK_SCREENSHOT_DIR=<dir> saves guide_window.png.
#include <QAction>
#include <QDesktopServices>
#include <QFile>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QScrollBar>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextStream>

#include "app/gui/main_window.h"
#include "tests/app/gui/window_test_env.h"
#include "tests/screenshot.h"
#include "widgets/panels/guide_window.h"

using namespace mlk;

namespace {

// The text of the first "# " heading of a Markdown text, as shown: without
// the code and emphasis marks.
QString firstHeading(const QString& markdown) {
    for (const QString& line : markdown.split(QLatin1Char('\n')))
        if (line.startsWith(QLatin1String("# ")))
            return line.mid(2).trimmed().remove(QLatin1Char('`')).remove(QLatin1Char('*'));
    return {};
}

// Clicks the link to `href` in the browser, as a user would, after bringing it into view.
bool clickLink(QTextBrowser* b, const QString& href) {
    for (QTextBlock block = b->document()->begin(); block.isValid(); block = block.next())
        for (auto it = block.begin(); !it.atEnd(); ++it) {
            const QTextFragment f = it.fragment();
            if (f.charFormat().anchorHref() != href) continue;
            QTextCursor c(b->document());
            c.setPosition(f.position() + f.length() / 2);
            b->setTextCursor(c);
            b->ensureCursorVisible();
            const QPoint at = b->cursorRect(c).center();
            QTest::mouseClick(b->viewport(), Qt::LeftButton, {}, at);
            return true;
        }
    return false;
}

// The top of the block whose text is `text`, in viewport coordinates.
int blockTop(QTextBrowser* b, const QString& text) {
    for (QTextBlock block = b->document()->begin(); block.isValid(); block = block.next())
        if (block.text() == text) {
            QTextCursor c(block);
            return b->cursorRect(c).top();
        }
    return -1;
}

}  // namespace

// Receives the URLs QDesktopServices would hand to the desktop's browser.
class UrlCatcher : public QObject {
    Q_OBJECT
public:
    QList<QUrl> urls;
public slots:
    void open(const QUrl& url) { urls << url; }
};

class GuideWindowTest : public QObject {
    Q_OBJECT
    QTemporaryDir dir_;

private slots:
    void initTestCase() { window_test::enter("Mismatch Lab Guide Test"); }
    void cleanupTestCase() { window_test::leave(); }

    void helpUserGuideShowsTheEmbeddedGuide() {
        MainWindow w(dir_.path() + "/runs.sqlite");
        w.show();
        QVERIFY(QTest::qWaitForWindowExposed(&w));
        QAction* guide = window_test::actionIn(w, "&Help", "&User guide");
        QVERIFY(guide);
        // First in Help, and no other action's shortcut (F1 is the glossary's).
        QCOMPARE(window_test::menuIn(w, "&Help")->actions().front(), guide);
        if (!guide->shortcut().isEmpty())
            for (QAction* a : w.findChildren<QAction*>())
                if (a != guide) QVERIFY2(a->shortcut() != guide->shortcut(), qPrintable(a->text()));
        QCOMPARE(w.findChild<GuideWindow*>(), nullptr);
        guide->trigger();
        auto* window = w.findChild<GuideWindow*>();
        QVERIFY(window);
        QVERIFY(QTest::qWaitForWindowExposed(window));
        QVERIFY(window->isWindow());
        QCOMPARE(window->windowModality(), Qt::NonModal);
        QVERIFY(QApplication::activeModalWidget() == nullptr);

        // The page is the embedded guide, rendered: its first heading is the
        // document's first block, as a heading, without the "#".
        QFile embedded(QStringLiteral(":/docs/guide.md"));
        QVERIFY2(embedded.open(QIODevice::ReadOnly), "docs/guide.md is not in the program's resources");
        const QString heading = firstHeading(QString::fromUtf8(embedded.readAll()));
        QVERIFY(!heading.isEmpty());
        QCOMPARE(window->browser()->source(), QUrl(QStringLiteral("qrc:/docs/guide.md")));
        const QTextBlock first = window->browser()->document()->firstBlock();
        QCOMPARE(first.text(), heading);
        QCOMPARE(first.blockFormat().headingLevel(), 1);
        QVERIFY(window->width() >= 500 && window->height() >= 400);
        testing_shots::save(window, "guide_window");

        // Closed, the action shows the same window again rather than a second one.
        window->close();
        QVERIFY(!window->isVisible());
        guide->trigger();
        QCOMPARE(w.findChildren<GuideWindow*>().size(), 1);
        QVERIFY(window->isVisible());
    }

    void linksGoWhereTheyPoint() {
        const QString other = dir_.path() + "/other.md";
        {
            QFile f(other);
            QVERIFY(f.open(QIODevice::WriteOnly));
            QTextStream(&f) << "# Other page\n\nfiller\n\n## Second part\n\nhere\n";
            QFile p(dir_.path() + "/page.md");
            QVERIFY(p.open(QIODevice::WriteOnly));
            QTextStream out(&p);
            out << "# A page\n\n[to the end](#the-last-part-a--b) [web](https://example.org/x) "
                   "[other](other.md#second-part) [missing](missing.md)\n\n";
            for (int i = 0; i < 200; ++i) out << "Paragraph " << i << " of filler text.\n\n";
            // Another screen of text after it, so the heading can come to the top.
            out << "## The last part: `a` & *b*\n\n";
            for (int i = 0; i < 40; ++i) out << "Closing paragraph " << i << ".\n\n";
        }
        GuideWindow window(QUrl::fromLocalFile(dir_.path() + "/page.md"));
        window.resize(600, 400);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QTextBrowser* b = window.browser();
        QCOMPARE(b->document()->firstBlock().text(), QStringLiteral("A page"));
        QCOMPARE(b->verticalScrollBar()->value(), 0);

        // An anchor on the page: its heading comes to the top.
        QVERIFY(clickLink(b, "#the-last-part-a--b"));
        QVERIFY(b->verticalScrollBar()->value() > 0);
        const int top = blockTop(b, "The last part: a & b");
        QVERIFY2(top >= 0 && top < 40, qPrintable(QString::number(top)));
        QCOMPARE(window.note(), QString());

        // A web link goes to the desktop's browser; the page stays.
        UrlCatcher catcher;
        QDesktopServices::setUrlHandler("https", &catcher, "open");
        QVERIFY(clickLink(b, "https://example.org/x"));
        QDesktopServices::unsetUrlHandler("https");
        QCOMPARE(catcher.urls, QList<QUrl>{QUrl("https://example.org/x")});
        QCOMPARE(b->source().fileName(), QStringLiteral("page.md"));

        // A page that is not there: the page stays and the window says why.
        QVERIFY(clickLink(b, "missing.md"));
        QCOMPARE(b->source().fileName(), QStringLiteral("page.md"));
        QVERIFY2(window.note().contains("missing.md"), qPrintable(window.note()));

        // Another page, at its section; Back returns to the first page.
        QVERIFY(clickLink(b, "other.md#second-part"));
        QCOMPARE(b->source().fileName(), QStringLiteral("other.md"));
        QCOMPARE(b->document()->firstBlock().text(), QStringLiteral("Other page"));
        QCOMPARE(b->document()->firstBlock().blockFormat().headingLevel(), 1);
        QCOMPARE(window.note(), QString());
        QVERIFY(b->isBackwardAvailable());
        b->backward();
        QCOMPARE(b->source().fileName(), QStringLiteral("page.md"));
        QCOMPARE(b->document()->firstBlock().text(), QStringLiteral("A page"));
        // Headings are anchors again on the page gone back to.
        b->verticalScrollBar()->setValue(0);
        b->scrollToAnchor("the-last-part-a--b");
        QVERIFY(b->verticalScrollBar()->value() > 0);
    }

    void findFieldFindsAndWraps() {
        QFile p(dir_.path() + "/find.md");
        QVERIFY(p.open(QIODevice::WriteOnly));
        QTextStream(&p) << "# Find\n\nalpha beta\n\ngamma alpha\n";
        p.close();
        GuideWindow window(QUrl::fromLocalFile(p.fileName()));
        window.findField()->setText("alpha");  // typing finds the first
        QCOMPARE(window.browser()->textCursor().selectedText(), QStringLiteral("alpha"));
        const int first = window.browser()->textCursor().selectionStart();
        QVERIFY(window.findNext());
        const int second = window.browser()->textCursor().selectionStart();
        QVERIFY(second > first);
        QVERIFY(window.findNext());  // past the last: from the top again
        QCOMPARE(window.browser()->textCursor().selectionStart(), first);
        window.findField()->setText("absent");
        QVERIFY(!window.findNext());
        QVERIFY(window.note().contains("absent"));
    }

    void headingAnchorsAreGitHubs() {
        QCOMPARE(headingAnchor("The window at a glance"), QStringLiteral("the-window-at-a-glance"));
        QCOMPARE(headingAnchor("Why this token?"), QStringLiteral("why-this-token"));
        QCOMPARE(headingAnchor("`settings --markdown`: the page"), QStringLiteral("settings---markdown-the-page"));
        QCOMPARE(headingAnchor("Mismatch Lab \u2014 user guide"), QStringLiteral("mismatch-lab--user-guide"));
        QCOMPARE(headingAnchor("MoE & R3"), QStringLiteral("moe--r3"));
    }
};

QTEST_MAIN(GuideWindowTest)
#include "guide_window_test.moc"
