// The run store: every run, its per-step metrics and drill-down data in one
// SQLite file (sqlite3 C API).
//
// - WAL journal, synchronous=NORMAL (a committed step survives a crash or kill
//   of the process; only an OS crash / power loss may lose the last steps),
//   busy_timeout 10 s, so a GUI can read from its own connection while the CLI
//   appends from another process.
// - One transaction per append_step(): a step is either completely present
//   (every metric, sample, curve and histogram row) or absent.
// - Schema version in PRAGMA user_version; the ordered migrations in store_open.cpp
//   run at open(). A file with a newer version, or one that is not a SQLite
//   database, is refused with StoreError naming the file and left untouched.
// - Doubles round-trip bit-exactly (including -0.0, subnormals and +-Inf). NaN
//   is stored as SQL NULL and read back as a quiet NaN (payload and sign of a
//   NaN are not kept).
// - A Store object is one connection guarded by a mutex: it may be shared by
//   threads, but give each process (and preferably each thread) its own.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace mlk {

class StoreError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// diverged: stopped at a step whose loss, gradient norm or key metric was
// NaN/Inf (that step is stored; no checkpoint is written after it).
enum class RunStatus { running, paused, finished, failed, stopped, diverged };
const char* run_status_name(RunStatus s);
// What list_runs and run_info report, instead of the stored "running" or
// "paused", for a run whose writing process is gone (core/store/run_lock.h).
// Never stored: `resume` continues such a run.
inline constexpr const char* kInterruptedStatus = "interrupted";
RunStatus parse_run_status(const std::string& s);  // throws StoreError on an unknown name

struct TokenSample {
    int32_t idx = 0;      // index of the sample within the step
    double lp_roll = 0;   // rollout log-prob of the token
    double lp_train = 0;  // training log-prob of the token
    int32_t seq = 0;      // sequence in the batch
    int32_t pos = 0;      // position in the response
    int32_t token = 0;    // token id
    bool operator==(const TokenSample&) const = default;
};

struct FtPoint {
    double t = 0;     // threshold t of F(t)
    double frac = 0;  // fraction of tokens with max(rho, 1/rho) > t
    bool operator==(const FtPoint&) const = default;
};

struct RouterBin {
    int32_t d = 0;      // experts of the rollout top-k missing from the training top-k
    int64_t count = 0;  // (token, layer) pairs with that d
    bool operator==(const RouterBin&) const = default;
};

struct TextSample {
    int32_t idx = 0;
    std::string prompt;
    std::string response;
    double reward = 0;
    std::string tokens_json;  // JSON: per-token ids, lp_roll, lp_train, router flips
    bool operator==(const TextSample&) const = default;
};

struct StepRecord {
    int64_t step = 0;
    std::vector<std::pair<std::string, double>> metrics;  // names unique within a step
    std::vector<TokenSample> token_samples;               // bounded: see Store::kMaxTokenSamples
    std::vector<FtPoint> ft_curve;
    std::vector<RouterBin> router_hist;
    std::vector<TextSample> text_samples;
    // The step's largest-|delta log p| tokens with what explains them, one
    // bounded JSON document (core/rl/worst_tokens.h writes and reads it);
    // empty: none stored.
    std::string worst_tokens_json;
};

struct StoredStep {
    int64_t step = 0;
    std::vector<std::pair<std::string, double>> metrics;  // sorted by name
    // When the step was committed, in seconds since the Unix epoch (ms
    // resolution); NaN for steps migrated from schema v1, which kept none.
    double time = std::numeric_limits<double>::quiet_NaN();
};

struct MetricTable {
    std::vector<int64_t> steps;               // ascending
    std::vector<std::string> names;           // sorted
    std::vector<std::vector<double>> values;  // [step][name]; NaN where absent
    std::vector<double> times;                // [step]: StoredStep::time
};

struct RunSummary {
    int64_t id = 0;
    std::string name, preset, status, created, updated;
    int64_t steps = 0;  // distinct steps appended (rows of the steps table)
};

struct RunInfo {
    int64_t id = 0;
    std::string name, created, status, preset, config_json;
    uint64_t seed = 0;
    std::string app_version, notes, updated;
    std::string error;    // why the run failed or diverged; empty otherwise
    std::string machine;  // where it ran (core/engines/machine.h); empty before schema v6
    int64_t steps = 0;
    std::optional<int64_t> last_step;
};

struct Checkpoint {
    int64_t step = 0;
    std::string path;
    std::string created;
};

// A run's place in a sweep (mismatch-lab-cli sweep).
struct SweepRun {
    int64_t sweep_id = 0, run_id = 0;
    std::string config_name;
    int64_t seed = 0;
    std::string tags;  // JSON array of strings: the configuration's name, "seed=N"
};

// A sweep as stored: its spec (sweep_identity's JSON: "configs", "seeds",
// "steps") is kept as text; readers that need its parts parse it.
struct SweepInfo {
    int64_t id = 0;
    std::string spec_hash, spec_json, created;
};

// A sweep slot whose run is kept as it is: a repeated sweep skips it (the
// others are run again).
bool sweep_slot_ended(const std::string& status);
// A status whose run a live writer holds (running or paused): a repeated
// sweep leaves its slot to that writer.
bool run_status_live(const std::string& status);
// A sweep run's tags as stored: ["<configuration name>", "seed=N"].
std::string sweep_run_tags(const std::string& config_name, int64_t seed);

class Store {
public:
    // Current schema version (PRAGMA user_version after open()).
    static int schema_version();
    // At most this many token samples are kept per step; longer lists are
    // thinned with an even stride (first kept, order preserved).
    static constexpr size_t kMaxTokenSamples = 4096;
    // PRAGMA application_id of a run store ("MLK1").
    static constexpr int32_t kApplicationId = 0x4D4C4B31;

    // Opens or creates the database and applies pending migrations. A file
    // this user may not write, or in a folder it may not write (where WAL
    // mode keeps its -wal and -shm files), is opened read-only: readable,
    // every write refused with a StoreError that says so; refused whole if
    // its schema is older than this build's (bringing it up to date writes).
    //
    // Intent::read never creates the file (StoreError when it is missing)
    // nor writes a schema into an empty one: an empty file reads as a store
    // without runs (read-only). A file with an older schema is still brought
    // up to date, as the next writer would. Intent::write also removes what
    // a writer killed while creating a store left beside it.
    enum class Intent { write, read };
    static Store open(const std::string& path, Intent intent = Intent::write);

    Store(Store&&) noexcept;
    Store& operator=(Store&&) noexcept;
    Store(const Store&) = delete;
    Store& operator=(const Store&) = delete;
    ~Store();

    // The database's absolute path (as opened, made absolute): checkpoint
    // paths below its folder are stored relative to it, so a run resumes
    // from any working directory and the folder can be moved whole.
    const std::string& path() const { return path_; }
    // Whether open() found the file read-only for this user.
    bool read_only() const;
    // SQLite's data_version: changes whenever another connection (another
    // process, or another Store on the same file) commits. Cheap: no I/O
    // beyond the WAL index. Throws StoreError when the store was opened
    // read-only with no writer and one has started since: open it again.
    int64_t data_version();

    // Runs. Times are ISO-8601 UTC with milliseconds ("2025-01-31T12:00:00.123Z").
    int64_t create_run(const std::string& name, const std::string& preset, const std::string& config_json,
                       uint64_t seed, RunStatus status = RunStatus::running,
                       const std::optional<SweepRun>& sweep_slot = std::nullopt,  // linked in the same transaction
                       const std::string& machine = {});                          // RunInfo::machine
    // error: why a run failed or diverged (cleared with any other status).
    void set_status(int64_t run_id, RunStatus status, const std::string& error = {});
    void rename_run(int64_t run_id, const std::string& name);
    void set_notes(int64_t run_id, const std::string& notes);
    void set_machine(int64_t run_id, const std::string& machine);
    // The run, all its rows and its checkpoint folder; no-op if absent.
    // StoreError, with nothing deleted, while a process writes the run.
    void delete_run(int64_t run_id);
    std::vector<RunSummary> list_runs();  // newest (highest id) first
    std::optional<RunInfo> run_info(int64_t run_id);

    // Steps. append_step writes every row of the step in one transaction,
    // replacing rows of the same step if it was written before. Throws
    // StoreError for an unknown run.
    void append_step(int64_t run_id, const StepRecord& rec);
    std::optional<int64_t> last_step(int64_t run_id);
    std::vector<int64_t> steps(int64_t run_id);             // ascending, every appended step
    std::vector<std::string> metric_names(int64_t run_id);  // sorted
    std::vector<std::pair<int64_t, double>> metric_series(int64_t run_id, const std::string& name);
    MetricTable all_metrics(int64_t run_id);
    // Metrics of steps > after_step, ascending (pass -1 or INT64_MIN for all):
    // for readers polling a run that another process is writing.
    std::vector<StoredStep> steps_since(int64_t run_id, int64_t after_step);
    // Drops every row of steps > step (metrics, samples, curves, checkpoints).
    void truncate_after(int64_t run_id, int64_t step);

    // One step's metrics, sorted by name (empty when the step is not stored).
    std::vector<std::pair<std::string, double>> step_metrics(int64_t run_id, int64_t step);
    // Drill-down readers for one step, in insertion order of idx / t / d.
    std::vector<TokenSample> token_samples(int64_t run_id, int64_t step);
    std::vector<FtPoint> ft_curve(int64_t run_id, int64_t step);
    std::vector<RouterBin> router_hist(int64_t run_id, int64_t step);
    std::vector<TextSample> text_samples(int64_t run_id, int64_t step);
    // The step's worst-tokens document as stored; "" when absent (older steps).
    std::string worst_tokens(int64_t run_id, int64_t step);

    // Checkpoints. Paths come back absolute whichever way they were stored.
    void add_checkpoint(int64_t run_id, int64_t step, const std::string& path);
    void remove_checkpoint(int64_t run_id, int64_t step);       // the row only; no-op if absent
    std::optional<Checkpoint> last_checkpoint(int64_t run_id);  // highest step
    std::vector<Checkpoint> checkpoints(int64_t run_id);        // ascending step

    // Sweeps (core/store/sweeps.cpp). open_sweep finds the sweep with this
    // spec hash or creates it; add_sweep_run links a run to one of its
    // configuration x seed slots (replacing an earlier run of that slot).
    int64_t open_sweep(const std::string& spec_hash, const std::string& spec_json);
    std::optional<int64_t> find_sweep(const std::string& spec_hash);
    std::optional<std::string> sweep_spec_json(int64_t sweep_id);  // as open_sweep stored it
    void add_sweep_run(const SweepRun& r);
    std::vector<SweepRun> sweep_runs(int64_t sweep_id);  // by run id
    std::vector<SweepInfo> list_sweeps();                // by id
    // Every run's slot, of every sweep (by sweep, then run id): one read for
    // a browser that shows which sweep each run belongs to.
    std::vector<SweepRun> all_sweep_runs();

    struct Impl;  // opaque: the connection, statement cache and mutex

private:
    explicit Store(std::unique_ptr<Impl> impl, std::string path);
    void delete_rows(int64_t run_id);
    std::unique_ptr<Impl> impl_;
    std::string path_;
};

}  // namespace mlk
