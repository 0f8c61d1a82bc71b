#include "widgets/data/run_data.h"

#include <algorithm>
#include <chrono>
#include <initializer_list>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include <nlohmann/json.hpp>

#include "core/config/config.h"
#include "core/metrics/catalogue.h"
#include "widgets/data/palette.h"
#include "widgets/data/run_database.h"

namespace mlk {

namespace {

constexpr int64_t kFromTheStart = std::numeric_limits<int64_t>::min();

bool sameValue(double a, double b) {
    // A step re-delivered by the worker after the poll read it is the same
    // step: NaN must equal NaN here, and -0.0 must differ from 0.0.
    return std::memcmp(&a, &b, sizeof a) == 0 || (std::isnan(a) && std::isnan(b));
}

// Drops every step >= step, and the same entries of the aligned vectors.
template <typename T>
void eraseFrom(std::vector<T>& sortedSteps, std::initializer_list<std::vector<double>*> aligned, double step) {
    const auto cut = std::lower_bound(sortedSteps.begin(), sortedSteps.end(), static_cast<T>(step));
    const auto keep = static_cast<std::size_t>(cut - sortedSteps.begin());
    sortedSteps.erase(cut, sortedSteps.end());
    for (std::vector<double>* values : aligned) values->resize(keep);
}

double secondsSinceEpochNow() {
    return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

QString seedGroupOf(const std::string& configJson) {
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(configJson.empty() ? std::string("{}") : configJson);
        // Canonical (every key, defaults filled in) when it is a valid config,
        // so two spellings of one configuration fall in one group.
        try {
            j = config_to_json(stored_config_from_json(j));
        } catch (const ConfigError&) {
        }
    } catch (const nlohmann::json::exception&) {
        return {};
    }
    if (!j.is_object()) return {};
    j.erase("seed");
    return QString::fromStdString(j.dump());
}

QString runLabel(qint64 id, const QString& name) { return QStringLiteral("#%1 %2").arg(id).arg(name); }

namespace {

// A family's presets share the start of their names ("collapse-demo-fp8-
// bypass", "collapse-demo-on-policy"): the labels keep what follows the last
// hyphen of that shared start, when each label starts with such a name (not
// a key=value setting) that goes on past it.
void dropSharedNamePrefix(QStringList& labels) {
    if (labels.size() < 2) return;
    QString prefix = labels.front().section(QLatin1Char(' '), 0, 0);
    for (const QString& label : labels) {
        const QString name = label.section(QLatin1Char(' '), 0, 0);
        if (name.contains(QLatin1Char('='))) return;
        qsizetype same = 0;
        while (same < prefix.size() && same < name.size() && prefix[same] == name[same]) ++same;
        prefix.truncate(same);
    }
    prefix.truncate(prefix.lastIndexOf(QLatin1Char('-')) + 1);
    if (prefix.isEmpty()) return;
    for (const QString& label : labels)
        if (label.section(QLatin1Char(' '), 0, 0).size() == prefix.size()) return;
    for (QString& label : labels) label.remove(0, prefix.size());
}

}  // namespace

QStringList legendLabels(const QList<qint64>& ids, const QStringList& names, bool idsFirst) {
    const auto words = [](const QString& name) { return name.split(QLatin1Char(' '), Qt::SkipEmptyParts); };
    QSet<QString> shared;
    if (names.size() >= 2) {
        const QStringList first = words(names.front());
        shared = QSet<QString>(first.begin(), first.end());
        for (qsizetype i = 1; i < names.size() && !shared.isEmpty(); ++i) {
            const QStringList other = words(names[i]);
            shared.intersect(QSet<QString>(other.begin(), other.end()));
        }
    }
    QStringList labels;
    for (const QString& name : names) {
        QStringList kept = words(name);
        kept.removeIf([&](const QString& word) { return shared.contains(word); });
        labels << (kept.isEmpty() ? name : kept.join(QLatin1Char(' ')));
    }
    dropSharedNamePrefix(labels);
    if (ids.size() != names.size()) return labels;
    QSet<QString> seen, repeated;
    for (const QString& label : labels)
        if (label.isEmpty() || seen.contains(label)) repeated.insert(label);
        else seen.insert(label);
    for (qsizetype i = 0; i < labels.size(); ++i)
        if (repeated.contains(labels[i])) labels[i] = runLabel(ids[i], names[i]);
        else if (idsFirst) labels[i] = runLabel(ids[i], labels[i]);
    return labels;
}

QString seedGroupLabel(const QString& firstRunLabel, int seeds) {
    return QObject::tr("%1 \u00B7 %n seeds", "", seeds).arg(firstRunLabel);
}

RunDataStore::RunDataStore(QObject* parent) : QObject(parent) {
    ownDatabase_ = new RunDatabase(this);
    attach(ownDatabase_);
}

RunDataStore::~RunDataStore() = default;

// --- Database ----------------------------------------------------------------

void RunDataStore::setDatabase(RunDatabase* database) {
    RunDatabase* next = database ? database : ownDatabase_;
    if (next == db_) return;
    attach(next);
    reload();
}

void RunDataStore::attach(RunDatabase* database) {
    for (const auto& c : dbConnections_) disconnect(c);
    dbConnections_.clear();
    db_ = database;
    dbConnections_ << connect(db_, &RunDatabase::opened, this, &RunDataStore::reload);
    dbConnections_ << connect(db_, &RunDatabase::changed, this, &RunDataStore::poll);
    // A rename shows at once, a deleted run leaves the charts at once.
    dbConnections_ << connect(db_, &RunDatabase::runsEdited, this, &RunDataStore::poll);
    if (db_ != ownDatabase_) {
        // A shared database that goes first (window teardown) must not leave
        // a dangling pointer; what was read stays, nothing more is polled.
        dbConnections_ << connect(db_, &QObject::destroyed, this, [this] { attach(ownDatabase_); });
    }
}

bool RunDataStore::open(const QString& path, QString* error) {
    QString message;
    if (!db_->open(path, &message)) {
        if (error) *error = message;
        emit errorOccurred(message);
        return false;
    }
    return true;  // db_ emitted opened(): every run is loaded
}

void RunDataStore::close() { db_->close(); }

bool RunDataStore::isOpen() const { return db_->isOpen(); }
QString RunDataStore::path() const { return db_->path(); }

void RunDataStore::reload() {
    QList<qint64> dropped;
    {
        std::lock_guard lock(mutex_);
        for (const auto& [id, entry] : runs_) dropped.append(id);
        runs_.clear();
    }
    if (!dropped.isEmpty()) {
        emit runsChanged();
        emit dataChanged(dropped);
    }
    poll();
}

void RunDataStore::startPolling(int intervalMs) { db_->startWatching(intervalMs); }
void RunDataStore::stopPolling() { db_->stopWatching(); }
bool RunDataStore::isPolling() const { return db_->isWatching(); }

void RunDataStore::poll() {
    if (!db_->isOpen()) return;
    QList<qint64> changed;
    bool metaChanged = false;
    try {
        const std::vector<RunSummary> summaries = db_->runs();
        for (const RunSummary& summary : summaries)
            if (pollRun(summary, metaChanged)) changed.append(summary.id);
        {
            std::lock_guard lock(mutex_);
            for (auto it = runs_.begin(); it != runs_.end();) {
                const bool listed = std::any_of(summaries.begin(), summaries.end(),
                                                [&](const RunSummary& s) { return s.id == it->first; });
                if (it->second.seenInStore && !listed) {
                    changed.append(it->first);
                    metaChanged = true;
                    it = runs_.erase(it);
                } else {
                    ++it;
                }
            }
        }
    } catch (const std::exception& e) {
        // A busy or vanished database must not stop the GUI: report, keep what
        // was read, try again at the next tick.
        emit errorOccurred(QString::fromUtf8(e.what()));
    }
    if (metaChanged) emit runsChanged();
    if (!changed.isEmpty()) emit dataChanged(changed);
}

RunDataStore::PollAction RunDataStore::pollActionLocked(const RunSummary& summary) const {
    const auto it = runs_.find(summary.id);
    if (it == runs_.end() || !it->second.seenInStore) return PollAction::load;
    const auto held = static_cast<int64_t>(it->second.steps.size());
    // Fewer steps in the store than here: the run was truncated (e.g. resumed
    // from an earlier checkpoint). Reloading keeps x ascending, no zig-zag.
    if (summary.steps < held) return PollAction::load;
    if (summary.status == run_status_name(RunStatus::running) || summary.steps > held) return PollAction::extend;
    return PollAction::none;
}

bool RunDataStore::updateMetaLocked(RunEntry& entry, const RunSummary& summary) {
    const RunMeta before = entry.meta;
    entry.meta.name = QString::fromStdString(summary.name);
    entry.meta.status = QString::fromStdString(summary.status);
    entry.meta.preset = QString::fromStdString(summary.preset);
    return before.name != entry.meta.name || before.status != entry.meta.status || before.preset != entry.meta.preset;
}

bool RunDataStore::pollRun(const RunSummary& summary, bool& metaChanged) {
    PollAction action;
    int64_t after = kFromTheStart;
    {
        std::lock_guard lock(mutex_);
        action = pollActionLocked(summary);
        RunEntry& entry = entryLocked(summary.id);
        metaChanged = updateMetaLocked(entry, summary) || metaChanged;
        if (action == PollAction::extend && !entry.steps.empty()) after = entry.steps.back();
    }
    if (action == PollAction::none) return false;

    // The queries run without the lock: the worker may append meanwhile.
    QString group;
    if (action == PollAction::load)
        if (const auto info = db_->runInfo(summary.id)) group = seedGroupOf(info->config_json);
    const std::vector<StoredStep> rows = db_->stepsSince(summary.id, after);

    std::lock_guard lock(mutex_);
    RunEntry& entry = entryLocked(summary.id);
    bool changed = false;
    if (action == PollAction::load) {
        changed = !entry.steps.empty() || !entry.seenInStore;
        resetDataLocked(entry);
        entry.seenInStore = true;
        if (entry.meta.seedGroup != group) {
            entry.meta.seedGroup = group;
            metaChanged = true;
        }
    }
    for (const StoredStep& row : rows) {
        // Steps the worker delivered directly while we were reading.
        if (!entry.steps.empty() && row.step <= entry.steps.back()) continue;
        appendRowLocked(entry, row.step, row.time, row.metrics);
        changed = true;
    }
    return changed;
}

// --- In-process feed ---------------------------------------------------------

void RunDataStore::addRun(const RunMeta& meta) {
    {
        std::lock_guard lock(mutex_);
        RunEntry& entry = entryLocked(meta.id);
        entry.meta.name = meta.name;
        entry.meta.status = meta.status;
        entry.meta.preset = meta.preset;
        if (!meta.seedGroup.isEmpty()) entry.meta.seedGroup = meta.seedGroup;
        if (meta.colour.isValid()) colourOverrides_[meta.id] = meta.colour;
    }
    emit runsChanged();
}

void RunDataStore::setRunStatus(qint64 runId, const QString& status) {
    {
        std::lock_guard lock(mutex_);
        RunEntry& entry = entryLocked(runId);
        if (entry.meta.status == status) return;
        entry.meta.status = status;
    }
    emit runsChanged();
}

void RunDataStore::appendStep(qint64 runId, const StepRecord& record) { appendSteps(runId, {record}); }

void RunDataStore::appendSteps(qint64 runId, const std::vector<StepRecord>& records) {
    bool changed = false;
    bool added = false;
    {
        std::lock_guard lock(mutex_);
        added = runs_.find(runId) == runs_.end();
        RunEntry& entry = entryLocked(runId);
        for (const StepRecord& record : records) changed = mergeDirectLocked(entry, record) || changed;
    }
    if (added) emit runsChanged();
    if (changed) emit dataChanged({runId});
}

bool RunDataStore::mergeDirectLocked(RunEntry& entry, const StepRecord& record) {
    if (!entry.steps.empty() && record.step <= entry.steps.back()) {
        if (holdsIdenticalLastLocked(entry, record.step, record.metrics)) return false;
        truncateFromLocked(entry, record.step);  // a rewritten step replaces, never duplicates
    }
    // The worker hands a step over right after committing it: now is its
    // commit time to within milliseconds (a reload reads the stored one).
    appendRowLocked(entry, record.step, secondsSinceEpochNow(), record.metrics);
    return true;
}

bool RunDataStore::holdsIdenticalLastLocked(const RunEntry& entry, int64_t step, const MetricRow& metrics) const {
    if (entry.steps.empty() || entry.steps.back() != step) return false;
    for (const auto& [name, value] : metrics) {
        const auto it = entry.metrics.find(name);
        if (it == entry.metrics.end() || it->second.steps.empty()) return false;
        const MetricSeries& s = it->second;
        if (s.steps.back() != static_cast<double>(step) || !sameValue(s.values.back(), value)) return false;
    }
    return true;
}

// --- Internal bookkeeping ----------------------------------------------------

RunDataStore::RunEntry& RunDataStore::entryLocked(qint64 runId) {
    auto [it, inserted] = runs_.try_emplace(runId);
    if (inserted) {
        it->second.meta.id = runId;
        it->second.meta.name = QStringLiteral("run %1").arg(runId);
        it->second.generation = nextGenerationLocked();
    }
    return it->second;
}

void RunDataStore::resetDataLocked(RunEntry& entry) {
    entry.steps.clear();
    entry.times.clear();
    entry.metrics.clear();
    entry.generation = nextGenerationLocked();
}

void RunDataStore::appendRowLocked(RunEntry& entry, int64_t step, double time, const MetricRow& metrics) {
    entry.steps.push_back(step);
    entry.times.push_back(time);
    for (const auto& [name, value] : metrics) {
        MetricSeries& s = entry.metrics[name];
        s.steps.push_back(static_cast<double>(step));
        s.values.push_back(value);
    }
}

void RunDataStore::truncateFromLocked(RunEntry& entry, int64_t step) {
    eraseFrom<int64_t>(entry.steps, {&entry.times}, static_cast<double>(step));
    for (auto& [name, s] : entry.metrics) eraseFrom<double>(s.steps, {&s.values}, static_cast<double>(step));
    entry.generation = nextGenerationLocked();
}

// --- Reading -----------------------------------------------------------------

QList<qint64> RunDataStore::runIds() const {
    std::lock_guard lock(mutex_);
    QList<qint64> ids;
    for (const auto& [id, entry] : runs_) ids.append(id);
    return ids;
}

QList<RunMeta> RunDataStore::runs() const {
    QList<RunMeta> out;
    std::lock_guard lock(mutex_);
    for (const auto& [id, entry] : runs_) {
        RunMeta meta = entry.meta;
        const auto colour = colourOverrides_.find(id);
        meta.colour = colour != colourOverrides_.end() ? colour->second : palette::runColour(id);
        out.append(meta);
    }
    return out;
}

std::optional<RunMeta> RunDataStore::run(qint64 runId) const {
    for (const RunMeta& meta : runs())
        if (meta.id == runId) return meta;
    return std::nullopt;
}

QStringList RunDataStore::metricNames() const {
    std::vector<std::string> names;
    {
        std::lock_guard lock(mutex_);
        for (const auto& [id, entry] : runs_)
            for (const auto& [name, s] : entry.metrics) names.push_back(name);
    }
    QStringList ordered;
    for (const std::string& name : order_metric_names(names)) ordered.append(QString::fromStdString(name));
    return ordered;
}

qint64 RunDataStore::stepCount(qint64 runId) const {
    std::lock_guard lock(mutex_);
    const auto it = runs_.find(runId);
    return it == runs_.end() ? 0 : static_cast<qint64>(it->second.steps.size());
}

std::optional<qint64> RunDataStore::lastStep(qint64 runId) const {
    std::lock_guard lock(mutex_);
    const auto it = runs_.find(runId);
    if (it == runs_.end() || it->second.steps.empty()) return std::nullopt;
    return it->second.steps.back();
}

MetricSeries RunDataStore::series(qint64 runId, const QString& metric) const {
    SeriesCursor cursor;
    syncSeries(runId, metric, cursor);
    return cursor.data;
}

SyncResult RunDataStore::syncSeries(qint64 runId, const QString& metric, SeriesCursor& cursor) const {
    const std::string name = metric.toStdString();
    std::lock_guard lock(mutex_);
    const auto run = runs_.find(runId);
    const MetricSeries* source = nullptr;
    quint64 generation = 0;
    if (run != runs_.end()) {
        generation = run->second.generation;
        const auto it = run->second.metrics.find(name);
        if (it != run->second.metrics.end()) source = &it->second;
    }
    const std::size_t available = source ? source->size() : 0;
    // Times are held once per step (not per metric): looked up for the
    // points copied out.
    const auto appendTimes = [&](std::size_t from) {
        if (from >= available) return;
        const RunEntry& entry = run->second;
        // Both step lists ascend: one search, then a merge walk.
        auto at = std::lower_bound(entry.steps.begin(), entry.steps.end(), static_cast<int64_t>(source->steps[from]));
        for (std::size_t i = from; i < available; ++i) {
            const auto step = static_cast<int64_t>(source->steps[i]);
            while (at != entry.steps.end() && *at < step) ++at;
            const bool found = at != entry.steps.end() && *at == step;
            cursor.data.times.push_back(found ? entry.times[std::size_t(at - entry.steps.begin())]
                                              : std::numeric_limits<double>::quiet_NaN());
        }
    };

    if (cursor.generation != generation) {
        const bool hadData = cursor.data.size() > 0;
        cursor.generation = generation;
        cursor.data = source ? *source : MetricSeries{};
        cursor.data.times.clear();
        if (source) appendTimes(0);
        return hadData || available > 0 ? SyncResult::replaced : SyncResult::unchanged;
    }
    if (available <= cursor.data.size()) return SyncResult::unchanged;
    const auto from = static_cast<std::ptrdiff_t>(cursor.data.size());
    cursor.data.steps.insert(cursor.data.steps.end(), source->steps.begin() + from, source->steps.end());
    cursor.data.values.insert(cursor.data.values.end(), source->values.begin() + from, source->values.end());
    appendTimes(std::size_t(from));
    return SyncResult::appended;
}

void RunDataStore::setColour(qint64 runId, const QColor& colour) {
    {
        std::lock_guard lock(mutex_);
        if (colour.isValid()) colourOverrides_[runId] = colour;
        else colourOverrides_.erase(runId);
    }
    emit runsChanged();
}

QColor RunDataStore::colour(qint64 runId) const {
    std::lock_guard lock(mutex_);
    const auto it = colourOverrides_.find(runId);
    return it != colourOverrides_.end() ? it->second : palette::runColour(runId);
}

}  // namespace mlk
