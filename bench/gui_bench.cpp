// Redraw cost of the live chart grid at its worst expected size: 10 runs x
// 10,000 steps x 4 charts in a 1600x1000 window (K3 KL on a log axis). One
// "full redraw" = every chart re-synced, re-thinned and pushed with replace()
// plus the repaint of the whole grid: what a user waits for per live update
// or per zoom. Target: under 16 ms (one frame at 60 Hz).
//
//   mismatch-lab-bench-gui [--runs N] [--steps N] [--iterations N]
#include <QApplication>
#include <QElapsedTimer>
#include <QLineSeries>
#include <QChart>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "widgets/chart_grid.h"
#include "widgets/run_data.h"

using namespace mlk;

namespace {

struct Options {
    int runs = 10;
    int steps = 10000;
    int iterations = 60;
    int pointBudget = MetricChart::kDefaultPointBudget;
};

Options parseOptions(int argc, char** argv) {
    Options o;
    for (int i = 1; i + 1 < argc; i += 2) {
        const int value = std::max(1, std::atoi(argv[i + 1]));
        if (!std::strcmp(argv[i], "--runs")) o.runs = value;
        else if (!std::strcmp(argv[i], "--steps")) o.steps = value;
        else if (!std::strcmp(argv[i], "--iterations")) o.iterations = value;
        else if (!std::strcmp(argv[i], "--point-budget")) o.pointBudget = std::atoi(argv[i + 1]);
    }
    return o;
}

// Noisy curves with the shapes of the real metrics, so thinning and the
// robust range see realistic data (including exact zeros on the log chart).
StepRecord syntheticStep(int run, int64_t step, std::mt19937& rng) {
    std::normal_distribution<double> noise;
    const double t = double(step);
    StepRecord r;
    r.step = step;
    r.metrics = {
        {"reward_mean", 0.2 + 0.6 * (1 - std::exp(-t / (800.0 + 200 * run))) + 0.05 * noise(rng)},
        {"k3_kl", run % 3 == 0 ? 0.0 : 1e-3 / (1 + run) * std::exp(0.3 * noise(rng))},
        {"grad_norm", 1.0 + 0.3 * std::abs(noise(rng)) + (step % 997 == 0 ? 30.0 : 0.0)},
        {"F@2", 0.01 / (1 + run) * std::exp(0.2 * noise(rng))},
    };
    return r;
}

struct Stats {
    double median = 0, p95 = 0, max = 0;
};

Stats statsOf(std::vector<double> ms) {
    std::sort(ms.begin(), ms.end());
    const auto at = [&](double q) { return ms[std::min(ms.size() - 1, std::size_t(q * double(ms.size() - 1) + 0.5))]; };
    return {at(0.5), at(0.95), ms.back()};
}

struct Timings {
    std::vector<double> update, paint, total;
};

// Times one full redraw: data -> series (redrawAllNow), then the paint.
void timeFullRedraw(QApplication& app, ChartGrid& grid, Timings& t) {
    QElapsedTimer clock;
    clock.start();
    grid.redrawAllNow();
    const double updated = double(clock.nsecsElapsed()) / 1e6;
    app.processEvents();  // deferred scene/layout work belongs to the redraw
    if (getenv("DBG")) std::printf("  events %.1f (paint %.1f)\n", double(clock.nsecsElapsed()) / 1e6 - updated, MetricChart::paintNs / 1e6);
    MetricChart::paintNs = 0;
    grid.repaint();
    const double total = double(clock.nsecsElapsed()) / 1e6;
    t.update.push_back(updated);
    t.paint.push_back(total - updated);
    t.total.push_back(total);
}

void report(const char* scenario, const Timings& t) {
    const Stats u = statsOf(t.update), p = statsOf(t.paint), all = statsOf(t.total);
    std::printf("%-28s median %6.2f ms  p95 %6.2f ms  max %6.2f ms   (series update median %5.2f, paint median %5.2f)  %s\n",
                scenario, all.median, all.p95, all.max, u.median, p.median, all.p95 < 16.0 ? "OK < 16 ms" : "OVER 16 ms");
}

}  // namespace

int main(int argc, char** argv) {
    // A bench must run on a headless machine; an explicit setting still wins.
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    const Options options = parseOptions(argc, argv);

    RunDataStore data;
    std::mt19937 rng(42);
    for (int run = 1; run <= options.runs; ++run) {
        data.addRun({run, QStringLiteral("run %1").arg(run), QStringLiteral("running"), QStringLiteral("tiny"), {}});
        std::vector<StepRecord> records;
        records.reserve(std::size_t(options.steps));
        for (int64_t s = 0; s < options.steps; ++s) records.push_back(syntheticStep(run, s, rng));
        data.appendSteps(run, records);
    }

    ChartGrid grid(&data);
    static int plotChanges = 0;
    struct PaintCounter : QObject {
        int paints = 0;
        bool eventFilter(QObject*, QEvent* e) override { if (e->type() == QEvent::Paint) ++paints; return false; }
    };
    static PaintCounter counter;
    for (MetricChart* c : grid.charts()) c->viewport()->installEventFilter(&counter);
    atexit([] { std::printf("viewport paints: %d\n", counter.paints); });
    for (MetricChart* c : grid.charts()) QObject::connect(c->chart(), &QChart::plotAreaChanged, [] { ++plotChanges; });
    atexit([] { std::printf("plot area changes: %d\n", plotChanges); });
    grid.chartFor(QStringLiteral("k3_kl"))->setLogScale(true);
    for (MetricChart* chart : grid.charts()) chart->setPointBudget(options.pointBudget);
    if (getenv("ONLY")) for (const QString& m : ChartGrid::defaultMetrics()) if (m != getenv("ONLY")) grid.removeChart(m);
    grid.resize(1600, 1000);
    grid.show();
    app.processEvents();

    QElapsedTimer first;
    first.start();
    grid.redrawAllNow();
    grid.repaint();
    const double firstMs = double(first.nsecsElapsed()) / 1e6;

    if (getenv("GRAB")) {
        for (int rep = 0; rep < 3; ++rep)
            for (MetricChart* c : grid.charts()) {
                QElapsedTimer t; t.start();
                c->grab();
                std::printf("grab %s %.1f ms\n", qPrintable(c->metric()), t.nsecsElapsed() / 1e6);
            }
        grid.setSharedXRange(1000, 2000);
        grid.redrawAllNow();
        for (int rep = 0; rep < 2; ++rep)
            for (MetricChart* c : grid.charts()) {
                QElapsedTimer t; t.start();
                c->grab();
                std::printf("zoomed grab %s %.1f ms\n", qPrintable(c->metric()), t.nsecsElapsed() / 1e6);
            }
        return 0;
    }
    qsizetype pointsPerSeries = 0;
    if (QLineSeries* s = grid.chartFor(QStringLiteral("reward_mean"))->rawSeries(1)) pointsPerSeries = s->count();

    std::printf("mismatch-lab-bench-gui: %d runs x %d steps x %zu charts, window 1600x1000, %d iterations\n", options.runs,
                options.steps, std::size_t(grid.charts().size()), options.iterations);
    std::printf("first redraw (EMA of every point, thinning, paint): %.2f ms; raw points drawn per series: %lld of %d\n",
                firstMs, static_cast<long long>(pointsPerSeries), options.steps);

    // Live: every run gains one step (one dataChanged per run), then a redraw.
    Timings live;
    int64_t nextStep = options.steps;
    for (int i = 0; i < options.iterations; ++i, ++nextStep) {
        for (int run = 1; run <= options.runs; ++run) data.appendStep(run, syntheticStep(run, nextStep, rng));
        timeFullRedraw(app, grid, live);
    }
    report("live (1 new step per run)", live);
    if (getenv("LIVEONLY")) {
        for (MetricChart* c : grid.charts()) {
            QElapsedTimer t; t.start();
            c->grab();
            std::printf("grab after live %s %.1f ms\n", qPrintable(c->metric()), t.nsecsElapsed() / 1e6);
        }
        QElapsedTimer t; t.start();
        grid.grab();
        std::printf("grab grid %.1f ms\n", t.nsecsElapsed() / 1e6);
        t.restart();
        for (MetricChart* c : grid.charts()) c->viewport()->update();
        app.processEvents();
        std::printf("update+events %.1f ms\n", t.nsecsElapsed() / 1e6);
        return 0;
    }

    // Zoom: a new shared x window each time, re-thinned at pixel resolution.
    Timings zoom;
    std::uniform_real_distribution<double> start(0, 0.7 * options.steps);
    for (int i = 0; i < options.iterations; ++i) {
        const double lo = start(rng);
        grid.setSharedXRange(lo, lo + 0.05 * options.steps + double(i % 7) * 0.04 * options.steps);
        timeFullRedraw(app, grid, zoom);
    }
    report("zoom (shared x window)", zoom);

    grid.resetZoom();
    Timings full;
    for (int i = 0; i < options.iterations; ++i) timeFullRedraw(app, grid, full);
    report("unchanged (full range)", full);
    return 0;
}
