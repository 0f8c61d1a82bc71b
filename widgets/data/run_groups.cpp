#include "widgets/data/run_groups.h"

#include <QObject>

#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "widgets/data/run_data.h"
#include "widgets/data/qt_text.h"

namespace mlk {

namespace {

bool isFinished(const std::string& status) { return status == run_status_name(RunStatus::finished); }

// "1 seed", "5 seeds": without a translation loaded, tr's %n leaves "(s)" as it is.
QString count(int n, const char* one, const char* many) { return QObject::tr(n == 1 ? one : many).arg(n); }

QString runsText(const RunGroup& g) {
    return count(static_cast<int>(g.runs.size()), "%1 run", "%1 runs") + QObject::tr(", %1 finished").arg(g.finished);
}

}  // namespace

std::vector<RunGroup> groupBySweep(const std::vector<GroupedRun>& runs, const std::vector<SweepInfo>& sweeps,
                                   const std::vector<SweepRun>& links) {
    std::map<int64_t, const GroupedRun*> byId;
    for (const GroupedRun& r : runs) byId[r.id] = &r;
    std::set<int64_t> inSweep;
    std::vector<RunGroup> out;
    for (auto s = sweeps.rbegin(); s != sweeps.rend(); ++s) {
        // The configurations in the sweep's own order (its spec), then any
        // the spec does not name (a spec from another version).
        std::vector<std::string> order;
        int seeds = 0;
        try {
            const nlohmann::json spec = nlohmann::json::parse(s->spec_json);
            seeds = spec.value("seeds", 0);
            for (const auto& c : spec.value("configs", nlohmann::json::array())) order.push_back(c.value("name", ""));
        } catch (const nlohmann::json::exception&) {
        }
        std::map<std::string, std::vector<std::pair<int64_t, int64_t>>> byConfig;  // config -> (seed, run)
        for (const SweepRun& l : links) {
            if (l.sweep_id != s->id || !byId.count(l.run_id)) continue;
            byConfig[l.config_name].emplace_back(l.seed, l.run_id);
            if (std::find(order.begin(), order.end(), l.config_name) == order.end()) order.push_back(l.config_name);
        }
        if (byConfig.empty()) continue;
        RunGroup g;
        g.key = QStringLiteral("sweep:%1").arg(s->id);
        g.created = qs(s->created);
        for (const std::string& name : order) {
            auto it = byConfig.find(name);
            if (it == byConfig.end()) continue;
            std::sort(it->second.begin(), it->second.end());
            RunGroup c;
            c.key = g.key + QStringLiteral("/") + qs(name);
            for (const auto& [seed, id] : it->second) {
                c.runs.push_back(id);
                c.finished += isFinished(byId.at(id)->status);
                inSweep.insert(id);
            }
            c.total = static_cast<int>(c.runs.size());
            c.label = qs(name) + QStringLiteral(": ") + runsText(c);
            g.finished += c.finished;
            g.children.push_back(std::move(c));
        }
        const int configs = static_cast<int>(std::max(order.size(), g.children.size()));
        g.total = seeds > 0 ? configs * seeds : 0;
        int present = 0;
        for (const RunGroup& c : g.children) present += static_cast<int>(c.runs.size());
        g.total = std::max(g.total, present);
        g.label = QObject::tr("Sweep %1: %2 \u00D7 %3, %4/%5 finished")
                      .arg(s->id)
                      .arg(count(configs, "%1 configuration", "%1 configurations"))
                      .arg(count(seeds, "%1 seed", "%1 seeds"))
                      .arg(g.finished)
                      .arg(g.total);
        out.push_back(std::move(g));
    }
    RunGroup loose;
    loose.key = QStringLiteral("sweep:none");
    for (const GroupedRun& r : runs) {
        if (inSweep.count(r.id)) continue;
        loose.runs.push_back(r.id);
        loose.finished += isFinished(r.status);
    }
    if (!loose.runs.empty()) {
        loose.total = static_cast<int>(loose.runs.size());
        loose.label = QObject::tr("Not in a sweep: ") + runsText(loose);
        out.push_back(std::move(loose));
    }
    return out;
}

std::vector<RunGroup> groupByConfiguration(const std::vector<GroupedRun>& runs, const std::vector<SweepRun>& links) {
    std::map<int64_t, std::string> configName;
    for (const SweepRun& l : links) configName.emplace(l.run_id, l.config_name);
    struct Members {
        std::vector<const GroupedRun*> runs;
        int64_t newest = 0;
    };
    std::map<QString, Members> groups;
    for (const GroupedRun& r : runs) {
        QString key = seedGroupOf(r.configJson);
        if (key.isEmpty()) key = QStringLiteral("run:%1").arg(r.id);  // unreadable: never grouped
        Members& m = groups[key];
        m.runs.push_back(&r);
        m.newest = std::max(m.newest, r.id);
    }
    std::vector<std::pair<int64_t, RunGroup>> ordered;
    for (auto& [key, m] : groups) {
        std::sort(m.runs.begin(), m.runs.end(), [](const GroupedRun* a, const GroupedRun* b) {
            return a->seed != b->seed ? a->seed < b->seed : a->id < b->id;
        });
        RunGroup g;
        g.key = QStringLiteral("config:") + key;
        const GroupedRun* oldest = m.runs.front();
        std::string name;
        for (const GroupedRun* r : m.runs) {
            g.runs.push_back(r->id);
            g.finished += isFinished(r->status);
            if (r->id < oldest->id) oldest = r;
            if (name.empty() && configName.count(r->id)) name = configName.at(r->id);
        }
        if (name.empty()) name = oldest->name;
        g.total = static_cast<int>(g.runs.size());
        QStringList seeds;
        for (const GroupedRun* r : m.runs) seeds << QString::number(r->seed);
        seeds.removeDuplicates();
        g.label = qs(name) + QStringLiteral(": ") + runsText(g) +
                  QObject::tr(" (seeds %1)").arg(seeds.join(QStringLiteral(", ")));
        ordered.emplace_back(m.newest, std::move(g));
    }
    std::sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::vector<RunGroup> out;
    for (auto& [newest, g] : ordered) out.push_back(std::move(g));
    return out;
}

}  // namespace mlk
