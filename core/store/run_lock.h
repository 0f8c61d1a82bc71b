// Who is writing a run. The process that steps a run holds an exclusive
// flock(2) on "<run checkpoint folder>/writer.lock" for as long as it writes;
// the kernel drops the lock when that process ends, however it ends (SIGKILL
// included). So a reader can tell a live run from one whose writer died, and
// a second writer of the same run is refused instead of interleaving steps.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace mlk {

// Where a run's checkpoints (and its writer lock) live next to its database:
// "<db>.ckpt/run-<id>".
std::string run_checkpoint_root(const std::string& db_path, int64_t run_id);

class RunWriterLock {
public:
    // Takes the run's writer lock, creating its folder; throws
    // std::runtime_error naming the holder's pid when another process
    // (or another lock in this one) writes the run.
    static RunWriterLock acquire(const std::string& db_path, int64_t run_id);

    RunWriterLock(RunWriterLock&&) noexcept;
    RunWriterLock& operator=(RunWriterLock&&) noexcept;
    RunWriterLock(const RunWriterLock&) = delete;
    RunWriterLock& operator=(const RunWriterLock&) = delete;
    ~RunWriterLock();

private:
    explicit RunWriterLock(int fd) : fd_(fd) {}
    int fd_ = -1;
};

// Whether some process holds the run's writer lock now. A run stored as
// running or paused whose writer is gone was interrupted (killed, crashed,
// machine down): `resume` continues it from its last checkpoint.
bool run_writer_alive(const std::string& db_path, int64_t run_id);

}  // namespace mlk
