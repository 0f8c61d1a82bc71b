#include "widgets/data/qt_text.h"

#include <QDateTime>
#include <QLocale>

#include <clocale>

namespace mlk {

namespace {

QString timeText(std::string_view iso, bool local, const QString& format) {
    const QDateTime t = QDateTime::fromString(qs(iso), Qt::ISODateWithMs);
    if (!t.isValid()) return qs(iso);
    return (local ? t.toLocalTime() : t.toUTC()).toString(format);
}

}  // namespace

QString localTimeText(std::string_view iso) { return timeText(iso, true, QStringLiteral("yyyy-MM-dd HH:mm")); }

void useOneNumberNotation() {
    QLocale::setDefault(QLocale::c());
    std::setlocale(LC_NUMERIC, "C");
}

QString utcTimeText(std::string_view iso) { return timeText(iso, false, QStringLiteral("yyyy-MM-dd HH:mm:ss")); }

}  // namespace mlk
