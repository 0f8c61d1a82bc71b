#include "widgets/data/probe_runner.h"

#include <QElapsedTimer>
#include <QThread>

#include <algorithm>
#include <cmath>
#include <exception>

#include "core/rl/probe.h"

namespace mlk {

ProbeRunner::ProbeRunner(QObject* parent) : QObject(parent) {}

ProbeRunner::~ProbeRunner() {
    if (thread_) {
        thread_->wait();
        delete thread_;
    }
}

ProbeOutcome ProbeRunner::probe(const Config& cfg, quint64 serial) {
    ProbeOutcome out;
    out.serial = serial;
    out.config = cfg;
    QElapsedTimer clock;
    clock.start();
    try {
        const ProbeResult r = run_probe(cfg, probe_initial_params(cfg));
        out.summary = probe_json(r, cfg);
        const TokenView& t = r.tokens;
        out.tokens = static_cast<int>(r.mismatch.num_valid_tokens);
        const size_t n = t.lp_roll.size();
        const size_t stride = std::max<size_t>(1, (n + kMaxPoints - 1) / kMaxPoints);
        for (size_t i = 0; i < n; i += stride)
            if (t.valid.empty() || t.valid[i])
                out.points.append(QPointF(std::exp(t.lp_roll[i]), std::exp(t.lp_train[i])));
    } catch (const std::exception& e) {
        out.error = QString::fromUtf8(e.what());
        out.summary = nlohmann::json();
    }
    out.ms = double(clock.nsecsElapsed()) / 1e6;
    return out;
}

quint64 ProbeRunner::request(const Config& cfg) {
    const quint64 serial = ++serial_;
    if (thread_) waiting_ = std::make_pair(cfg, serial);
    else start(cfg, serial);
    return serial;
}

void ProbeRunner::start(const Config& cfg, quint64 serial) {
    auto result = std::make_shared<ProbeOutcome>();
    running_ = result;
    thread_ = QThread::create([cfg, serial, result] { *result = probe(cfg, serial); });
    thread_->setObjectName(QStringLiteral("probe"));
    connect(thread_, &QThread::finished, this, &ProbeRunner::onThreadDone);
    thread_->start(QThread::LowPriority);  // a training run on the worker keeps its pace
    emit started(serial);
}

void ProbeRunner::onThreadDone() {
    thread_->deleteLater();
    thread_ = nullptr;
    const std::shared_ptr<ProbeOutcome> done = std::move(running_);
    if (waiting_) {
        const auto [cfg, serial] = *waiting_;
        waiting_.reset();
        start(cfg, serial);  // the finished one is already out of date
        return;
    }
    if (done && done->serial == serial_) emit finished(*done);
}

}  // namespace mlk
