// The "Lessons" dock: the guided path of core's lessons (core/config/
// lessons.h) in teaching order, the selected lesson's question, what to look
// at and its explanation with the sources it comes from, and one click to run
// its experiment (and, where it has one, to probe it and try its changes).
// The panel only shows and asks: the window launches or loads the runs,
// picks the charts and says which one to read (setReadHint).
#pragma once

#include <QList>
#include <QString>
#include <QWidget>

class QLabel;
class QListWidget;
class QPushButton;
class QTextBrowser;
namespace mlk {
class FlowLayout;
}

namespace mlk {

struct Lesson;

class LessonsPanel : public QWidget {
    Q_OBJECT
public:
    explicit LessonsPanel(QWidget* parent = nullptr);
    static constexpr int kPreferredWidth = 420;
    // kPreferredWidth wide: the change buttons' flow would ask for all of
    // them on one row, and the dock would take that from the charts.
    QSize sizeHint() const override;

    int count() const;
    int currentLesson() const;  // -1 when none is selected
    void selectLesson(int index);
    const Lesson& lesson(int index) const;

    // The page as shown (title, question, what to look at, why, source, runs).
    QString text() const;
    // "Read: <chart title>" under the page, in the accent colour; "" hides it.
    void setReadHint(const QString& text);
    QString readHint() const;
    // What the last click did ("Queued 2 runs, loaded 1 finished run").
    void setStatus(const QString& text);
    QString status() const;

    QPushButton* runButton() const { return run_; }
    QPushButton* probeButton() const { return probe_; }
    QList<QPushButton*> changeButtons() const { return changeButtons_; }

signals:
    void lessonSelected(int index);
    void runRequested(int index);
    void probeRequested(int index);
    // One of the lesson's probe changes ("key=value"), on top of the probe's settings.
    void changeRequested(int index, const QString& change);

private:
    void showLesson(int index);

    QListWidget* list_ = nullptr;
    QTextBrowser* page_ = nullptr;
    QLabel* read_ = nullptr;
    QLabel* status_ = nullptr;
    QPushButton* run_ = nullptr;
    QPushButton* probe_ = nullptr;
    QWidget* changes_ = nullptr;
    FlowLayout* changesLayout_ = nullptr;
    QList<QPushButton*> changeButtons_;
};

}  // namespace mlk
