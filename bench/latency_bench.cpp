// Event-loop latency of the workbench while a run trains: a 5 ms timer on
// the GUI thread records how late each tick fires; prints p50/p99/max.
// Usage: mismatch-lab-bench-latency [steps]   (offscreen unless a display is set)
#include <QApplication>
#include <QElapsedTimer>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTimer>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "app/gui/main_window.h"
#include "core/config/config.h"
#include "widgets/panels/config_form.h"

int main(int argc, char** argv) {
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM") && qEnvironmentVariableIsEmpty("DISPLAY"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    QStandardPaths::setTestModeEnabled(true);
    QApplication::setOrganizationName("MismatchLabBench");
    QApplication::setApplicationName("Mismatch Lab Bench");
    const int steps = argc > 1 ? std::atoi(argv[1]) : 60;
    QTemporaryDir dir;
    mlk::MainWindow w(dir.path() + "/bench.sqlite");
    mlk::Config c = w.configForm()->config();
    c.rl.steps = steps;
    w.configForm()->setConfig(c);
    w.show();

    std::vector<double> late_ms;
    QElapsedTimer clock;
    qint64 expected = 0;
    QTimer tick;
    tick.setTimerType(Qt::PreciseTimer);
    tick.setInterval(5);
    bool training = false;
    QObject::connect(&w, &mlk::MainWindow::runFinished, &app, [&] { app.quit(); });
    QObject::connect(&tick, &QTimer::timeout, &app, [&] {
        const qint64 now = clock.nsecsElapsed();
        if (w.isBusy()) {
            training = true;
            late_ms.push_back(std::max<qint64>(0, now - expected) / 1e6);
        }
        expected = now + 5'000'000;
    });
    clock.start();
    expected = 5'000'000;
    tick.start();
    w.startRun();
    app.exec();
    if (!training || late_ms.empty()) {
        std::fprintf(stderr, "no training was observed\n");
        return 1;
    }
    std::sort(late_ms.begin(), late_ms.end());
    auto pct = [&](double p) { return late_ms[std::min(late_ms.size() - 1, (size_t)(p * late_ms.size()))]; };
    std::printf("event-loop lateness while training (%zu ticks of 5 ms, %d RL steps of the default config)\n",
                late_ms.size(), steps);
    std::printf("  p50 %.2f ms   p99 %.2f ms   max %.2f ms   (target p99 < 50 ms)\n", pct(0.50), pct(0.99),
                late_ms.back());
    return 0;
}
