// The probe panel's engine: run_probe (core/rl/probe.h, what `mismatch-lab-cli
// probe --json` runs) on a thread of its own, so the window never waits.
// Requests coalesce: while one probe runs, a newer request replaces any
// waiting one, and a result that a newer request has overtaken is dropped.
// Only the latest settings matter to someone dragging through the options.
#pragma once

#include <QList>
#include <QObject>
#include <QPointF>
#include <QString>

#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/config/config.h"

class QThread;

namespace mlk {

struct ProbeOutcome {
    quint64 serial = 0;  // of the request (1, 2, ...)
    Config config;
    // probe_json: exactly the `probe --json` object; empty when the probe failed.
    nlohmann::json summary;
    QList<QPointF> points;  // (p_roll, p_train) of the compared tokens, at most kMaxPoints
    int tokens = 0;         // compared tokens (points may hold fewer)
    double ms = 0;          // wall time of the probe, initial weights included
    QString error;
};

class ProbeRunner : public QObject {
    Q_OBJECT
public:
    static constexpr int kMaxPoints = 6000;  // a scatter beyond this is one blot and slow to lay out

    explicit ProbeRunner(QObject* parent = nullptr);
    ~ProbeRunner() override;  // waits for a running probe (it cannot be interrupted)

    // Probes `cfg` now, or after the running probe (replacing any waiting one).
    // Returns the request's serial.
    quint64 request(const Config& cfg);
    bool busy() const { return thread_ != nullptr; }
    quint64 latestSerial() const { return serial_; }

    // The probe itself, on the calling thread: what the worker runs.
    static ProbeOutcome probe(const Config& cfg, quint64 serial = 0);

signals:
    void started(quint64 serial);
    // The latest request's outcome (never an overtaken one).
    void finished(const mlk::ProbeOutcome& outcome);

private:
    void start(const Config& cfg, quint64 serial);
    void onThreadDone();

    QThread* thread_ = nullptr;
    std::shared_ptr<ProbeOutcome> running_;
    std::optional<std::pair<Config, quint64>> waiting_;
    quint64 serial_ = 0;
};

}  // namespace mlk
