// Help > Glossary: the key terms (core/metrics/glossary.h) and every metric
// of the catalogue under its group, each with its title, key, meaning,
// formula and which way is good (the same text as the metric's tooltips,
// widgets/data/metric_help.h), filtered as the user types.
#pragma once

#include <QString>
#include <QWidget>

class QLineEdit;
class QTextBrowser;

namespace mlk {

class Glossary : public QWidget {
    Q_OBJECT
public:
    explicit Glossary(QWidget* parent = nullptr);

    // Shows only the entries whose text contains `text` (any case); "" = all.
    void setFilter(const QString& text);
    QLineEdit* searchField() const { return search_; }
    int shownTerms() const { return shownTerms_; }
    int shownMetrics() const { return shownMetrics_; }
    QString html() const;  // the page as shown

private:
    void render();

    QLineEdit* search_ = nullptr;
    QTextBrowser* page_ = nullptr;
    int shownTerms_ = 0, shownMetrics_ = 0;
};

}  // namespace mlk
