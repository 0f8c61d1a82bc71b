#include "core/store/export.h"

#include <cmath>
#include <limits>
#include <set>
#include <stdexcept>

#include "core/config/number_text.h"
#include "core/metrics/catalogue.h"
#include "core/store/store_db.h"

namespace mlk {

std::vector<std::string> export_columns(Store& store, const std::vector<int64_t>& run_ids) {
    std::vector<std::string> stored;
    for (int64_t id : run_ids)
        for (auto& n : store.metric_names(id)) stored.push_back(n);
    return order_metric_names(stored);
}

namespace {

std::string csv_number(double v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return general_text(v, 17);
}

nlohmann::json number_json(double v) {
    if (std::isnan(v)) return "NaN";
    if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
    return v;
}

RunInfo info_or_throw(Store& store, int64_t id) {
    auto info = store.run_info(id);
    if (!info) throw std::invalid_argument("run " + std::to_string(id) + " is not in " + store.path());
    return *info;
}

std::string csv_quote(const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
}

}  // namespace

std::string export_csv(Store& store, const std::vector<int64_t>& run_ids) {
    std::vector<RunInfo> infos;  // every run checked before anything is written
    for (int64_t id : run_ids) infos.push_back(info_or_throw(store, id));
    const std::vector<std::string> cols = export_columns(store, run_ids);
    const bool many = run_ids.size() > 1;
    std::string out = many ? "run_id,run_name,step,time,elapsed_s" : "step,time,elapsed_s";
    for (const auto& c : cols) out += "," + csv_quote(c);
    out += "\n";
    for (const RunInfo& info : infos) {
        const int64_t id = info.id;
        const double created = seconds_from_iso(info.created);
        MetricTable t = store.all_metrics(id);
        std::vector<int> at(cols.size(), -1);
        for (size_t c = 0; c < cols.size(); ++c)
            for (size_t n = 0; n < t.names.size(); ++n)
                if (t.names[n] == cols[c]) at[c] = (int)n;
        for (size_t s = 0; s < t.steps.size(); ++s) {
            if (many) out += std::to_string(id) + "," + csv_quote(info.name) + ",";
            out += std::to_string(t.steps[s]) + ",";
            const double time = t.times[s];
            if (std::isfinite(time)) {
                out += iso_from_millis(std::llround(time * 1000.0)) + ",";
                if (std::isfinite(created)) out += fixed_text(time - created, 3);
            } else {
                out += ",";
            }
            for (size_t c = 0; c < cols.size(); ++c) {
                out += ",";
                out += csv_number(at[c] >= 0 ? t.values[s][at[c]] : std::numeric_limits<double>::quiet_NaN());
            }
            out += "\n";
        }
    }
    return out;
}

nlohmann::json export_json(Store& store, const std::vector<int64_t>& run_ids) {
    nlohmann::json runs = nlohmann::json::array();
    for (int64_t id : run_ids) {
        RunInfo info = info_or_throw(store, id);
        nlohmann::json meta = {{"id", info.id},           {"name", info.name},
                               {"preset", info.preset},   {"status", info.status},
                               {"created", info.created}, {"updated", info.updated},
                               {"seed", info.seed},       {"app_version", info.app_version},
                               {"machine", info.machine}, {"notes", info.notes},
                               {"steps", info.steps}};
        try {
            meta["config"] = nlohmann::json::parse(info.config_json);
        } catch (const nlohmann::json::exception&) {
            meta["config_text"] = info.config_json;
        }
        MetricTable t = store.all_metrics(id);
        nlohmann::json steps = nlohmann::json::array();
        for (size_t s = 0; s < t.steps.size(); ++s) {
            nlohmann::json row = {{"step", t.steps[s]}};
            for (size_t n = 0; n < t.names.size(); ++n) row[t.names[n]] = number_json(t.values[s][n]);
            steps.push_back(std::move(row));
        }
        runs.push_back({{"run", meta}, {"steps", steps}});
    }
    if (run_ids.size() == 1) return runs[0];
    return {{"runs", runs}};
}

double parse_exported_number(const nlohmann::json& v) {
    if (v.is_number()) return v.get<double>();
    if (v.is_string()) {
        const std::string s = v.get<std::string>();
        if (s == "NaN" || s == "nan") return std::numeric_limits<double>::quiet_NaN();
        if (s == "Infinity" || s == "inf") return std::numeric_limits<double>::infinity();
        if (s == "-Infinity" || s == "-inf") return -std::numeric_limits<double>::infinity();
        char* end = nullptr;
        const double x = c_strtod(s.c_str(), &end);
        if (end == s.c_str()) throw std::invalid_argument("not an exported number: " + v.dump());
        return x;
    }
    throw std::invalid_argument("not an exported number: " + v.dump());
}

}  // namespace mlk
