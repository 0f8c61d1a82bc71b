// Help > User guide: a Markdown page (the user guide, embedded in the
// program's resources) in a window of its own beside the workbench, never
// modal. Headings get the anchors GitHub gives them ("## Run browser" is
// #run-browser), so the page's links to its own sections work as they do on
// the web; a link to another page goes there when that page is embedded too,
// web links open in the desktop's browser, and a find field searches the
// page.
#pragma once

#include <QTextBrowser>
#include <QUrl>
#include <QWidget>

class QLabel;
class QLineEdit;
class QToolButton;

namespace mlk {

// The anchor GitHub gives a heading: lower case, letters, digits, '-' and '_'
// kept, spaces to '-', everything else dropped ("The window at a glance" ->
// "the-window-at-a-glance").
QString headingAnchor(const QString& heading);

// A QTextBrowser that gives a Markdown page's headings their anchors every
// time it loads one, before it scrolls to the link's fragment, and that stays
// on its page when a link names a page that is not there.
class GuideBrowser : public QTextBrowser {
    Q_OBJECT
public:
    using QTextBrowser::QTextBrowser;

signals:
    // After each setSource: `shown` false when `url` names a missing page.
    void followed(const QUrl& url, bool shown);

protected:
    void doSetSource(const QUrl& url, QTextDocument::ResourceType type) override;
};

class GuideWindow : public QWidget {
    Q_OBJECT
public:
    // `page`: a Markdown file, "qrc:/docs/guide.md" for the embedded guide.
    explicit GuideWindow(const QUrl& page, QWidget* parent = nullptr);

    QTextBrowser* browser() const { return browser_; }
    QLineEdit* findField() const { return find_; }
    // Why the last link went nowhere ("" after one that did).
    QString note() const;

    // The next match of the find field's text after the cursor, from the top
    // again past the last one (backward: the previous). False when none.
    bool findNext(bool backward = false);

private:
    GuideBrowser* browser_ = nullptr;
    QLineEdit* find_ = nullptr;
    QToolButton *back_ = nullptr, *home_ = nullptr;
    QLabel* note_ = nullptr;
    QUrl page_;
};

}  // namespace mlk
