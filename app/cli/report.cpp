// `mismatch-lab-cli report RUN [RUN ...] --db FILE --out FILE.html|FILE.pdf
//      [--baseline RUN] [--step N] [--metric NAME ...] [--title TEXT] [--no-appendix]`
// A thin argument layer over widgets/report.h. The first run is the baseline
// unless --baseline names one; --step defaults to each run's last step.
// Exit codes (the command catches its own errors): 0 written, 2 bad input
// (message names the problem: unknown run id, metric or step, extension,
// missing database), 1 failure (cannot write, unreadable store, ...).
#include <QApplication>
#include <QtGlobal>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "app/cli/args.h"
#include "core/store/store.h"
#include "widgets/report/report.h"

namespace mlk::cli {

namespace {

int64_t parse_id(const std::string& what, const std::string& s) {
    try {
        size_t used = 0;
        long long id = std::stoll(s, &used);
        if (used == s.size() && id > 0) return id;
    } catch (const std::exception&) {
    }
    throw UsageError(what + ": '" + s + "' is not a run id (a positive integer; see `runs`)");
}

}  // namespace

int cmd_report(const std::vector<std::string>& argv) {
    try {
        Args a = parse_args(argv, {"--db", "--out", "--baseline", "--step", "--metric", "--title"}, {"--no-appendix"});
        if (a.positional.empty()) throw UsageError("expected at least one RUN id");
        ReportRequest req;
        for (const auto& p : a.positional) req.runs.push_back(parse_id("RUN", p));
        if (a.has("--baseline")) req.baseline = parse_id("--baseline", a.get("--baseline"));
        if (a.has("--step")) {
            const std::string s = a.get("--step");
            try {
                size_t used = 0;
                long long v = std::stoll(s, &used);
                if (used != s.size() || v < 0) throw std::invalid_argument(s);
                req.step = v;
            } catch (const std::exception&) {
                throw UsageError("--step: '" + s + "' is not a step (a non-negative integer)");
            }
        }
        req.metrics = a.all("--metric");
        req.title = a.get("--title");
        req.appendix = !a.has("--no-appendix");
        const std::string out = a.require("--out");
        if (!report_extension_ok(out))
            throw UsageError("--out: '" + out + "' has an unknown extension; allowed: .html, .htm, .pdf");
        const std::string db = a.require("--db");
        if (!std::ifstream(db)) throw UsageError("--db: " + db + " does not exist");

        std::unique_ptr<QApplication> app;
        if (!QCoreApplication::instance()) {
            if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
            static int argc = 1;
            static char name[] = "mismatch-lab-cli";
            static char* args[] = {name, nullptr};
            app = std::make_unique<QApplication>(argc, args);
        } else if (!qobject_cast<QApplication*>(QCoreApplication::instance())) {
            throw std::runtime_error("report needs a QApplication, but a non-GUI application object exists");
        }

        std::unique_ptr<Store> store;
        try {
            store = std::make_unique<Store>(Store::open(db));
        } catch (const StoreError& e) {
            throw UsageError(std::string("--db: ") + e.what());
        }
        Report rep = build_report(*store, req);
        save_report(rep, out);
        for (const auto& n : rep.notes) std::fprintf(stderr, "note: %s\n", n.c_str());
        std::printf("wrote %s (%zu run(s), %d chart(s), %zu data file(s))\n", out.c_str(), req.runs.size(), rep.images,
                    rep.attachments.size());
        return 0;
    } catch (const UsageError& e) {
        std::fprintf(stderr, "mismatch-lab-cli report: %s\n", e.what());
        return 2;
    } catch (const std::invalid_argument& e) {  // ReportInputError, ConfigError
        std::fprintf(stderr, "mismatch-lab-cli report: %s\n", e.what());
        return 2;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "mismatch-lab-cli report: error: %s\n", e.what());
        return 1;
    }
}

}  // namespace mlk::cli
