// Persistent worker pool. A parallel region with n tasks on T threads is cut
// into P = min(4T, n) fixed parts, part p = tasks [p*n/P, (p+1)*n/P). Which
// thread runs a part is decided at run time (the caller and the workers claim
// parts from a counter), so a descheduled worker never stalls the caller, but
// the parts themselves never change with timing; kernels only ever split
// disjoint outputs across tasks, so results do not depend on who ran what.
#include "kernels/cpu/thread_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <numeric>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define MLK_PAUSE() _mm_pause()
#define MLK_HAVE_MXCSR 1
#else
#define MLK_PAUSE() ((void)0)
#endif

#include "kernels/cpu/work.h"
#include "kernels/kernels.h"

namespace mlk::cpu {
namespace {

thread_local bool tl_in_region = false;
// The thread count this application thread asked for (set_num_threads); 0 =
// the hardware's. Per thread, because the fast family's reduction plans read
// it: a probe on one thread must not change the bits of a run on another.
thread_local int tl_threads = 0;

// How long an idle thread spins before it sleeps. The serial stretches
// between a step's kernels (sampling, bookkeeping, small row ops) often last
// longer than 50 us, after which a sleeping worker's wake-up on a VM comes late
// and the caller runs most parts alone; 300 us against 50: dense-small 180.0 against
// 183.2 ms, moe-small 227.6 against 236.6 ms (best of four alternating runs,
// two threads, busy machine). An idle workbench spins that long once per region.
constexpr auto kSpinFor = std::chrono::microseconds(300);

// Parts per thread of a region: more parts than threads let whoever is free
// take the next one, so a thread the VM descheduled for a while costs that
// while once, not the whole region's wait for its fixed half.
inline constexpr int kPartsPerThread = 4;

// claim word: generation (32 bits) | parts (16 bits) | next part (16 bits)
inline uint64_t pack(uint32_t gen, uint32_t parts, uint32_t next) {
    return (static_cast<uint64_t>(gen) << 32) | (static_cast<uint64_t>(parts) << 16) | next;
}

class Pool {
public:
    Pool() { resize(default_threads()); }
    ~Pool() {
        std::lock_guard<std::mutex> lk(run_mu_);
        stop_workers();
    }

    // Read once: hardware_concurrency() reads sysfs on every call, and the
    // fast family asks for the thread count on every kernel call (1.8% of a
    // dense-small step under perf).
    static int default_threads() {
        static const int n = [] {
            const unsigned h = std::thread::hardware_concurrency();
            return h == 0 ? 1 : static_cast<int>(std::min(h, 256u));
        }();
        return n;
    }

    int threads() const { return nthreads_.load(std::memory_order_relaxed); }

    void resize(int n) {
        if (n <= 0) n = default_threads();
        n = std::min(n, 256);
        std::lock_guard<std::mutex> lk(run_mu_);
        if (n == threads() && static_cast<int>(workers_.size()) == n - 1) return;
        stop_workers();
        stop_.store(false);
        nthreads_.store(n);
        // The generation is read here, under run_mu_, not by the new thread: a
        // job published before the thread first runs must still look new to it.
        const uint32_t g0 = gen_.load(std::memory_order_acquire);
        for (int i = 1; i < n; ++i) workers_.emplace_back([this, g0] { worker(g0); });
    }

    void run(int ntasks, RangeFn fn, void* ctx, int wanted) {
        const int T = std::min(threads(), wanted);
        if (T <= 1 || ntasks <= 1 || tl_in_region || !run_mu_.try_lock()) {
            fn(ctx, 0, ntasks);
            return;
        }
        const uint32_t parts = static_cast<uint32_t>(std::min(kPartsPerThread * T, ntasks));
        const uint32_t g = gen_.load(std::memory_order_relaxed) + 1;
        fn_ = fn;
        ctx_ = ctx;
        ntasks_ = ntasks;
        job_threads_ = wanted;
#ifdef MLK_HAVE_MXCSR
        mxcsr_ = _mm_getcsr();  // workers use the caller's FTZ/DAZ/rounding state
#endif
        done_.store(0, std::memory_order_relaxed);
        claim_.store(pack(g, parts, 0), std::memory_order_release);
        gen_.store(g, std::memory_order_seq_cst);
        wake_workers();
        tl_in_region = true;
        work(g, false);
        tl_in_region = false;
        wait_done(parts);
        run_mu_.unlock();
    }

private:
    // Claims and runs parts of job g until none is left.
    void work(uint32_t g, bool is_worker) {
        for (;;) {
            uint64_t c = claim_.load(std::memory_order_acquire);
            uint32_t part, parts;
            for (;;) {
                if (static_cast<uint32_t>(c >> 32) != g) return;
                parts = static_cast<uint32_t>((c >> 16) & 0xffffu);
                part = static_cast<uint32_t>(c & 0xffffu);
                if (part >= parts) return;
                if (claim_.compare_exchange_weak(c, c + 1, std::memory_order_acq_rel, std::memory_order_acquire)) break;
            }
            const int b = static_cast<int>(static_cast<int64_t>(ntasks_) * part / parts);
            const int e = static_cast<int>(static_cast<int64_t>(ntasks_) * (part + 1) / parts);
#ifdef MLK_HAVE_MXCSR
            if (is_worker && _mm_getcsr() != mxcsr_) _mm_setcsr(mxcsr_);
#else
            (void)is_worker;
#endif
            if (is_worker) tl_threads = job_threads_;  // a kernel asking inside the region sees the caller's count
            if (e > b) fn_(ctx_, b, e);
            if (done_.fetch_add(1, std::memory_order_seq_cst) + 1 == static_cast<int>(parts) &&
                caller_sleeping_.load(std::memory_order_seq_cst)) {
                { std::lock_guard<std::mutex> lk(done_mu_); }
                done_cv_.notify_one();
            }
        }
    }

    void wait_done(uint32_t parts) {
        const int want = static_cast<int>(parts);
        const auto t0 = std::chrono::steady_clock::now();
        int spins = 0;
        while (done_.load(std::memory_order_acquire) != want) {
            if (++spins < 64) {
                MLK_PAUSE();
                continue;
            }
            spins = 0;
            if (std::chrono::steady_clock::now() - t0 < kSpinFor) continue;
            std::unique_lock<std::mutex> lk(done_mu_);
            caller_sleeping_.store(true, std::memory_order_seq_cst);
            done_cv_.wait(lk, [&] { return done_.load(std::memory_order_seq_cst) == want; });
            caller_sleeping_.store(false, std::memory_order_relaxed);
            break;
        }
    }

    void worker(uint32_t seen) {
        tl_in_region = true;
        for (;;) {
            uint32_t g;
            auto t0 = std::chrono::steady_clock::now();
            int spins = 0;
            while ((g = gen_.load(std::memory_order_acquire)) == seen) {
                if (++spins < 64) {
                    MLK_PAUSE();
                    continue;
                }
                spins = 0;
                if (std::chrono::steady_clock::now() - t0 < kSpinFor) continue;
                // Sleep; the generation is re-checked under the lock (see wake_workers).
                std::unique_lock<std::mutex> lk(sleep_mu_);
                sleepers_.fetch_add(1, std::memory_order_seq_cst);
                sleep_cv_.wait(lk, [&] { return gen_.load(std::memory_order_seq_cst) != seen; });
                sleepers_.fetch_sub(1, std::memory_order_seq_cst);
                t0 = std::chrono::steady_clock::now();
            }
            seen = g;
            if (stop_.load(std::memory_order_acquire)) return;
            work(g, true);
        }
    }

    // A worker that saw the old generation is either still spinning, or holds
    // sleep_mu_ until it waits; taking the lock after publishing orders us after
    // its check, so the notify cannot be lost.
    void wake_workers() {
        if (sleepers_.load(std::memory_order_seq_cst) == 0) return;
        { std::lock_guard<std::mutex> lk(sleep_mu_); }
        sleep_cv_.notify_all();
    }

    void stop_workers() {  // with run_mu_ held
        if (workers_.empty()) return;
        stop_.store(true, std::memory_order_release);
        gen_.fetch_add(1, std::memory_order_seq_cst);
        { std::lock_guard<std::mutex> lk(sleep_mu_); }
        sleep_cv_.notify_all();
        for (auto& t : workers_) t.join();
        workers_.clear();
    }

    std::mutex run_mu_;
    std::vector<std::thread> workers_;
    std::atomic<uint32_t> gen_{0};
    std::atomic<uint64_t> claim_{0};
    std::atomic<int> done_{0};
    std::atomic<int> sleepers_{0};
    std::atomic<bool> caller_sleeping_{false};
    std::atomic<bool> stop_{false};
    std::atomic<int> nthreads_{1};
    std::mutex sleep_mu_, done_mu_;
    std::condition_variable sleep_cv_, done_cv_;
    RangeFn fn_ = nullptr;
    void* ctx_ = nullptr;
    int ntasks_ = 0;
    int job_threads_ = 1;
    unsigned mxcsr_ = 0;
};

Pool& pool() {
    static Pool p;
    return p;
}

}  // namespace

void parallel_run(int ntasks, RangeFn fn, void* ctx) { pool().run(ntasks, fn, ctx, num_threads()); }

}  // namespace mlk::cpu

namespace mlk {
// The pool only grows (to the largest count any thread asked for); each region
// uses at most its caller's count.
void set_num_threads(int n) {
    cpu::tl_threads = std::clamp(n <= 0 ? cpu::Pool::default_threads() : n, 1, 256);
    if (cpu::tl_threads > cpu::pool().threads()) cpu::pool().resize(cpu::tl_threads);
}
int num_threads() { return cpu::tl_threads > 0 ? cpu::tl_threads : cpu::Pool::default_threads(); }
int default_num_threads() { return cpu::Pool::default_threads(); }

// One pool region of T parts; each part claims tasks from a shared counter
// until none is left, so a large task on one thread does not hold back the
// rest. Inside the region every kernel runs serially (tl_in_region) with the
// caller's thread count (set on the workers by Pool::work), hence the bits of
// running the tasks in order. A worker's flops and GEMM shapes are handed to
// the caller's counters afterwards: bench reads the caller's.
int parallel_task_workers(int n) { return cpu::tl_in_region ? 1 : std::max(1, std::min(num_threads(), n)); }

void parallel_tasks(int n, const double* cost, const std::function<void(int)>& task) {
    parallel_tasks(n, cost, [&](int i, int) { task(i); });
}

void parallel_tasks(int n, const double* cost, const std::function<void(int, int)>& task) {
    if (n <= 0) return;
    std::vector<int> order((size_t)n);
    std::iota(order.begin(), order.end(), 0);
    if (cost) std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return cost[a] > cost[b]; });
    const int T = parallel_task_workers(n);
    if (T <= 1) {
        for (int i : order) task(i, 0);
        return;
    }
    std::atomic<int> next{0};
    std::mutex mu;
    std::exception_ptr error;
    double worker_flops = 0;
    GemmShapeLog* const caller_log = cpu::gemm_shape_log();
    const std::thread::id caller = std::this_thread::get_id();
    // T ranges over T threads: a range's first index is its thread's worker slot.
    cpu::parallel_for(T, [&](int worker, int) {
        const bool on_caller = std::this_thread::get_id() == caller;
        GemmShapeLog local;
        GemmShapeLog* const own_log = cpu::gemm_shape_log();
        const double flops0 = kernel_flop_count();
        if (!on_caller) set_gemm_shape_log(caller_log ? &local : nullptr);
        for (int at; (at = next.fetch_add(1, std::memory_order_relaxed)) < n;) {
            try {
                task(order[(size_t)at], worker);
            } catch (...) {
                std::lock_guard<std::mutex> lk(mu);
                if (!error) error = std::current_exception();
            }
        }
        if (on_caller) return;
        set_gemm_shape_log(own_log);
        std::lock_guard<std::mutex> lk(mu);
        worker_flops += kernel_flop_count() - flops0;
        if (caller_log)
            for (const auto& [shape, calls] : local) (*caller_log)[shape] += calls;
    });
    cpu::count_flops(worker_flops);
    if (error) std::rethrow_exception(error);
}
}  // namespace mlk
