#include "widgets/panels/config_diff.h"

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include <QCheckBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QStyle>
#include <QStyleOptionHeader>
#include <QTableWidget>
#include <QVBoxLayout>

#include <nlohmann/json.hpp>

#include "core/config/config.h"
#include "widgets/data/palette.h"
#include "widgets/panels/run_browser_parts.h"
#include "widgets/data/qt_text.h"

namespace mlk {

namespace run_browser {

void MiddleElidingHeader::initStyleOptionForIndex(QStyleOptionHeader* option, int logicalIndex) const {
    QHeaderView::initStyleOptionForIndex(option, logicalIndex);
    const int margin = 2 * style()->pixelMetric(QStyle::PM_HeaderMargin, option, this);
    const int icon = option->icon.isNull() ? 0 : style()->pixelMetric(QStyle::PM_SmallIconSize, option, this);
    const int room = sectionSize(logicalIndex) - margin - (icon ? icon + margin : 0);
    option->text = option->fontMetrics.elidedText(option->text, Qt::ElideMiddle, std::max(room, 0));
}

QString MiddleElidingHeader::shownText(int logicalIndex) const {
    QStyleOptionHeader option;
    initStyleOption(&option);
    initStyleOptionForIndex(&option, logicalIndex);
    return option.text;
}

}  // namespace run_browser

namespace {

// Dotted key -> display text for a stored config; schema keys through the
// typed parser (so defaults are filled in), raw flattening as the fallback for
// a config this build cannot parse. `ignored`: the keys that config does not
// read, and why (config_ignored_keys; none known for an unparsed config).
struct FlatConfig : std::map<std::string, std::string> {
    std::map<std::string, std::string> ignored;
};

void flattenRaw(const nlohmann::json& j, const std::string& prefix, FlatConfig& out) {
    if (j.is_object()) {
        for (auto it = j.begin(); it != j.end(); ++it)
            flattenRaw(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
    } else {
        out[prefix] = j.is_string() ? j.get<std::string>() : j.dump();
    }
}

FlatConfig flatConfig(const std::string& configJson) {
    FlatConfig out;
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(configJson.empty() ? std::string("{}") : configJson);
    } catch (const nlohmann::json::exception&) {
        return out;
    }
    try {
        const Config c = stored_config_from_json(j);
        for (const ConfigKey& k : config_schema()) out[k.key] = config_value_text(c, k.key);
        for (const IgnoredKey& ig : config_ignored_keys(c)) out.ignored.emplace(ig.key, ig.reason);
    } catch (const ConfigError&) {
        flattenRaw(j, "", out);
    }
    return out;
}

}  // namespace

ConfigDiffView::ConfigDiffView(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(2);
    auto* head = new QHBoxLayout;
    title_ = new QLabel(this);
    title_->setWordWrap(true);
    title_->setTextFormat(Qt::RichText);
    only_ = new QCheckBox(tr("Differences only"), this);
    only_->setObjectName(QStringLiteral("differencesOnly"));
    only_->setChecked(true);
    head->addWidget(title_, 1);
    head->addWidget(only_, 0, Qt::AlignTop);
    layout->addLayout(head);
    table_ = new QTableWidget(0, 2, this);
    table_->setObjectName(QStringLiteral("configDiff"));
    // Down to a row under its header: on a 720-point screen its scroll
    // area's own minimum kept the run list above it at two rows.
    table_->setMinimumHeight(2 * table_->fontMetrics().height() + 16);
    table_->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table_->setHorizontalHeader(new run_browser::MiddleElidingHeader(Qt::Horizontal, table_));
    table_->horizontalHeader()->setSectionsClickable(true);
    table_->verticalHeader()->hide();
    table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 6);
    table_->horizontalHeader()->setStretchLastSection(true);
    table_->setAlternatingRowColors(true);
    table_->setWordWrap(false);
    layout->addWidget(table_, 1);
    connect(only_, &QCheckBox::toggled, this, [this] { rebuild(); });
}

void ConfigDiffView::setColumns(const QString& title, const QList<Column>& columns) {
    title_->setText(title);
    columns_ = columns;
    rebuild();
}

void ConfigDiffView::setDifferencesOnly(bool on) { only_->setChecked(on); }
bool ConfigDiffView::differencesOnly() const { return only_->isChecked(); }

QStringList ConfigDiffView::keys() const {
    QStringList out;
    for (int r = 0; r < table_->rowCount(); ++r)
        if (auto* it = table_->item(r, 0); it && table_->columnSpan(r, 0) == 1) out << it->text();
    return out;
}

void ConfigDiffView::rebuild() {
    std::vector<FlatConfig> flat;
    for (const Column& c : columns_) flat.push_back(flatConfig(c.configJson));
    std::vector<std::string> keys;
    std::set<std::string> seen;
    // Not a setting, but what a difference in timings or in the fast
    // family's bits may come from: compared like one where two runs say.
    const std::string ranOn = "(ran on)";
    const auto recorded =
        std::count_if(columns_.begin(), columns_.end(), [](const Column& c) { return !c.machine.empty(); });
    if (recorded >= 2) {
        for (size_t i = 0; i < flat.size(); ++i)
            if (!columns_[int(i)].machine.empty()) flat[i][ranOn] = columns_[int(i)].machine;
        keys.push_back(ranOn);
        seen.insert(ranOn);
    }
    for (const ConfigKey& k : config_schema())
        if (seen.insert(k.key).second) keys.push_back(k.key);
    for (const FlatConfig& f : flat)
        for (const auto& [k, v] : f)
            if (seen.insert(k).second) keys.push_back(k);

    table_->clear();
    table_->setColumnCount(1 + static_cast<int>(columns_.size()));
    QStringList headers{tr("Key")};
    for (const Column& c : columns_) headers << c.title;
    table_->setHorizontalHeaderLabels(headers);
    for (int i = 0; i < columns_.size(); ++i) {
        QTableWidgetItem* header = table_->horizontalHeaderItem(i + 1);
        header->setToolTip(columns_[i].title);
        if (columns_[i].colour.isValid()) header->setIcon(run_browser::colourSwatch(columns_[i].colour));
    }
    table_->setRowCount(0);
    if (columns_.isEmpty()) return;
    const bool only = only_->isChecked();
    const QString missing = QStringLiteral("\u2014");
    for (const std::string& k : keys) {
        QStringList values;
        bool differs = false;
        for (const FlatConfig& f : flat) {
            const auto it = f.find(k);
            values << (it == f.end() ? missing : qs(it->second));
            if (values.back() != values.front()) differs = true;
        }
        if (only && !differs) continue;
        const int r = table_->rowCount();
        table_->insertRow(r);
        auto* keyItem = new QTableWidgetItem(qs(k));
        if (const ConfigKey* meta = find_config_key(k))
            keyItem->setToolTip(QStringLiteral("%1 (%2)").arg(qs(meta->label), qs(meta->section)));
        else if (k == ranOn)
            keyItem->setToolTip(
                tr("Not a setting: the machine that made the run. Its timings depend on it, and so "
                   "may the fast family's bits (thread count, GPU)."));
        if (differs) {
            QFont font = keyItem->font();
            font.setBold(true);
            keyItem->setFont(font);
        }
        table_->setItem(r, 0, keyItem);
        // A value its run does not read is grey, with why; a difference
        // between two such values changed nothing, so it is not highlighted.
        const auto ignoredIn = [&](size_t i) -> const std::string* {
            const auto it = flat[i].ignored.find(k);
            return it == flat[i].ignored.end() ? nullptr : &it->second;
        };
        for (int i = 0; i < values.size(); ++i) {
            auto* item = new QTableWidgetItem(values[i]);
            const std::string* why = ignoredIn(size_t(i));
            if (i > 0 && values[i] != values[0] && !(why && ignoredIn(0)))
                item->setBackground(palette::changedSetting());
            if (why) {
                item->setForeground(palette::neutralInk());
                item->setToolTip(tr("Not read by this run: %1").arg(qs(*why)));
            }
            table_->setItem(r, i + 1, item);
        }
    }
    table_->resizeColumnToContents(0);
    // Each run's column as wide as its values and its name, up to an equal
    // share of the table (at least 220 px, for many runs): capped at 220
    // alone, two runs' first header would read "#6 collapse-de…-policy seed=3"
    // beside a last column of a thousand empty pixels.
    const int valueColumns = table_->columnCount() - 1;
    const int share = valueColumns > 0 ? (table_->viewport()->width() - table_->columnWidth(0)) / valueColumns : 0;
    for (int c = 1; c < table_->columnCount() - 1; ++c) {
        table_->resizeColumnToContents(c);
        table_->setColumnWidth(c, std::min(table_->columnWidth(c), std::max(220, share)));
    }
    if (only && table_->rowCount() == 0 && columns_.size() > 1) {
        table_->setRowCount(1);
        auto* item = new QTableWidgetItem(tr("(identical configs)"));
        item->setForeground(palette::neutralInk());
        item->setFlags(Qt::ItemIsEnabled);
        table_->setItem(0, 0, item);
        table_->setSpan(0, 0, 1, table_->columnCount());
    }
}

}  // namespace mlk
