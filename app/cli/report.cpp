// `report RUN [RUN ...] --db FILE --out FILE.html|FILE.pdf [--baseline RUN]
//  [--step N] [--metric NAME ...] [--title TEXT] [--appendix]`:
// a thin argument layer over widgets/report/report.h. The first run is the
// baseline unless --baseline names one; --step defaults to each run's last step.
// `report --sweep ID --db FILE --out FILE [--baseline CONFIG] [--title TEXT]
//  [--verdict key=value ...]`: a sweep's report (widgets/report/report_sweep.h),
// the first configuration the baseline unless --baseline names one.
#include <QApplication>
#include <QtGlobal>

#include <cstdio>
#include <cstdint>
#include <memory>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "widgets/data/qt_text.h"
#include "widgets/report/report.h"
#include "widgets/report/report_sweep.h"

namespace mlk::cli {

namespace {

// Drawn offscreen, a report has no use for the session's runtime folder, but
// Qt asks for it and warns where none is set (a container, CI, su): a line
// of noise on every `report`. Every other message goes where it went.
QtMessageHandler qt_messages = nullptr;
void without_runtime_dir_warning(QtMsgType type, const QMessageLogContext& context, const QString& message) {
    if (type == QtWarningMsg && message.startsWith(QLatin1String("QStandardPaths: XDG_RUNTIME_DIR not set"))) return;
    if (qt_messages) qt_messages(type, context, message);
    else std::fprintf(stderr, "%s\n", qPrintable(qFormatLogMessage(type, context, message)));
}

// Charts are drawn offscreen: a report needs no display.
std::unique_ptr<QApplication> report_application() {
    if (QCoreApplication::instance()) return nullptr;
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    qt_messages = qInstallMessageHandler(without_runtime_dir_warning);
    static int argc = 1;
    static char name[] = "mismatch-lab-cli";
    static char* args[] = {name, nullptr};
    auto app = std::make_unique<QApplication>(argc, args);
    useOneNumberNotation();
    return app;
}

int sweep_report(const Args& a) {
    for (const char* o : {"--step", "--metric", "--appendix"})
        if (a.has(o)) throw UsageError(std::string("--sweep: ") + o + " is for run reports; not allowed with --sweep");
    if (!a.positional.empty())
        throw UsageError("--sweep: reports a whole sweep; RUN ids (" + a.positional.front() +
                         ") are not allowed with it");
    SweepReportRequest req;
    req.sweep_id = parse_integer("--sweep", a.get("--sweep"), 1, INT64_MAX);
    req.baseline = a.get("--baseline");
    req.title = a.get("--title");
    req.thresholds = parse_verdict_options(a);
    const std::string out = output_file_option(a, "--out");
    if (!report_extension_ok(out))
        throw UsageError("--out: '" + out + "' has an unknown extension; allowed: .html, .htm, .pdf");
    Store store = open_existing_store(a);
    const std::unique_ptr<QApplication> app = report_application();
    const Report rep = build_sweep_report(store, req);  // bad input throws before anything is written
    save_report(rep, out);
    std::printf("wrote %s (sweep %lld, %d chart(s), %zu data file(s))\n", out.c_str(), (long long)req.sweep_id,
                rep.images, rep.attachments.size());
    return 0;
}

}  // namespace

int cmd_report(const Argv& argv) {
    Spec spec;
    spec.values = {"--db", "--out", "--baseline", "--step", "--metric", "--title", "--verdict", "--sweep"};
    spec.repeatable = {"--metric", "--verdict"};
    spec.flags = {"--appendix"};
    spec.positional = "RUN ids";
    spec.max_positional = 1000;
    const Args a = parse_args(argv, spec);
    if (a.has("--sweep")) return sweep_report(a);
    if (a.positional.empty()) throw UsageError("expected a RUN id or --sweep ID (see `mismatch-lab-cli runs`)");
    ReportRequest req;
    for (const auto& p : a.positional) req.runs.push_back(parse_run_id("RUN", p));
    if (a.has("--baseline")) req.baseline = parse_run_id("--baseline", a.get("--baseline"));
    if (a.has("--step")) req.step = parse_integer("--step", a.get("--step"), 0, INT64_MAX / 2);
    req.metrics = a.all("--metric");
    req.title = a.get("--title");
    req.verdicts = parse_verdict_options(a);
    req.appendix = a.has("--appendix");  // the per-run CSV is attached either way
    const std::string out = output_file_option(a, "--out");
    if (!report_extension_ok(out))
        throw UsageError("--out: '" + out + "' has an unknown extension; allowed: .html, .htm, .pdf");
    Store store = open_existing_store(a);

    const std::unique_ptr<QApplication> app = report_application();
    const Report rep = build_report(store, req);
    save_report(rep, out);
    for (const auto& n : rep.notes) std::fprintf(stderr, "note: %s\n", n.c_str());
    std::printf("wrote %s (%zu run(s), %d chart(s), %zu data file(s))\n", out.c_str(), req.runs.size(), rep.images,
                rep.attachments.size());
    return 0;
}

}  // namespace mlk::cli
