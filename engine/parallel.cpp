// engine/parallel.cpp — parallel_for (engine/strided.h) on a small pool of worker threads.
//
// Why not OpenMP: at the end of an OpenMP region every thread must arrive at the barrier, so one
// thread that the OS has not scheduled yet (a busy machine, another process's threads) stalls
// the others, which spin while they wait. On a shared 2-core machine that made 2 threads slower
// than 1 (bench/RESULTS.md). Here a job is cut into chunks and every thread, the caller
// included, claims the next unclaimed chunk until none is left; the caller returns as soon as
// every chunk is done, so a worker that wakes late finds nothing left and costs nothing: the
// worst case is the caller doing all the chunks, i.e. serial speed.
//
// Determinism: the chunks depend only on n and the thread count, and each chunk is computed by
// the same code whichever thread claims it, so results are bit-identical run after run.
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <string>
#include <thread>

#include "engine/strided.h"

namespace hg {

namespace {

// Below this many operations in all, waking a second thread costs more than it saves (a wake-up
// is a few microseconds; a core does a few thousand simple operations in that time).
constexpr int64_t kMinParallelWork = int64_t{1} << 15;
// Chunks per thread: more than one, so that a thread that starts late leaves work to the others.
constexpr int64_t kChunksPerThread = 2;
// How often a waiting thread looks again (yielding the core in between) before it sleeps.
constexpr int kSpinChecks = 200;
// WebAssembly without threads (the live page's build): no worker can start, so every job runs on
// the calling thread, as with HANDGRAD_NUM_THREADS=1.
#if defined(__EMSCRIPTEN__) && !defined(__EMSCRIPTEN_PTHREADS__)
constexpr bool kThreadsAvailable = false;
#else
constexpr bool kThreadsAvailable = true;
#endif

int threads_from_environment() {
  for (const char* name : {"HANDGRAD_NUM_THREADS", "OMP_NUM_THREADS"}) {
    const char* v = std::getenv(name);
    if (v && *v) {
      const int n = std::atoi(v);
      if (n >= 1) return std::min(n, 256);
    }
  }
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

std::atomic<int> g_threads{0};  // 0: not yet read from the environment
thread_local bool t_inside_job = false;

class Pool {
 public:
  // The workers run for the life of the process (the pool is never destroyed, see pool()).
  explicit Pool(int workers) {
    for (int i = 0; i < workers; ++i) std::thread([this] { work(); }).detach();
  }

  // Runs the job; false (nothing run) when another thread's job holds the pool.
  bool run(int64_t n, int64_t chunks, void (*call)(void*, int64_t, int64_t), void* body) {
    std::unique_lock<std::mutex> busy(submit_, std::try_to_lock);
    if (!busy.owns_lock()) return false;
    uint64_t gen;
    {
      std::lock_guard<std::mutex> lock(mu_);
      job_ = Job{n, chunks, call, body};
      done_.store(0);
      error_ = nullptr;
      gen = ++gen_;
      ticket_.store(uint64_t{tag(gen)} << 32);  // the job's tag in the high half, next chunk in the low half
    }
    wake_.notify_all();
    claim_and_run(gen, job_);
    // Wait for the chunks that workers claimed: briefly by watching, then asleep.
    for (int spin = 0; spin < kSpinChecks && done_.load() != chunks; ++spin) std::this_thread::yield();
    if (done_.load() != chunks) {
      std::unique_lock<std::mutex> lock(mu_);
      finished_.wait(lock, [&] { return done_.load() == chunks; });
    }
    if (error_) std::rethrow_exception(error_);
    return true;
  }

 private:
  static uint32_t tag(uint64_t gen) { return static_cast<uint32_t>(gen); }  // what fits beside a chunk index

  struct Job {
    int64_t n = 0, chunks = 0;
    void (*call)(void*, int64_t, int64_t) = nullptr;
    void* body = nullptr;
  };

  // The next chunk of generation `gen`, or -1 when none is left (or a later job has begun).
  int64_t claim(uint64_t gen, int64_t chunks) {
    uint64_t t = ticket_.load();
    while (true) {
      const int64_t c = static_cast<int64_t>(t & 0xffffffffu);
      if ((t >> 32) != tag(gen) || c >= chunks) return -1;
      if (ticket_.compare_exchange_weak(t, t + 1)) return c;
    }
  }

  // Claims and runs chunks of generation `gen` until none is left.
  void claim_and_run(uint64_t gen, const Job& job) {
    t_inside_job = true;
    for (int64_t c; (c = claim(gen, job.chunks)) >= 0;) {
      try {
        job.call(job.body, job.n * c / job.chunks, job.n * (c + 1) / job.chunks);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu_);
        if (!error_) error_ = std::current_exception();
      }
      if (done_.fetch_add(1) + 1 == job.chunks) {
        std::lock_guard<std::mutex> lock(mu_);  // the caller may be about to wait
        finished_.notify_all();
      }
    }
    t_inside_job = false;
  }

  void work() {
    uint64_t seen = 0;
    while (true) {
      // Jobs come in bursts (a training step runs hundreds): watch for the next one for a few
      // microseconds before going to sleep, where a wake-up would cost more than that.
      for (int spin = 0; spin < kSpinChecks && (ticket_.load(std::memory_order_relaxed) >> 32) == tag(seen); ++spin)
        std::this_thread::yield();
      Job job;
      uint64_t gen;
      {
        std::unique_lock<std::mutex> lock(mu_);
        wake_.wait(lock, [&] { return gen_ != seen; });
        gen = seen = gen_;
        job = job_;
      }
      claim_and_run(gen, job);
    }
  }

  std::mutex submit_;  // one job at a time
  std::mutex mu_;
  std::condition_variable wake_, finished_;
  uint64_t gen_ = 0;
  Job job_;
  std::atomic<uint64_t> ticket_{0};
  std::atomic<int64_t> done_{0};
  std::exception_ptr error_;
};

Pool* pool() {
  // Created on first use, never destroyed: static destructors may still run jobs at exit, and
  // the workers, asleep, end with the process.
  static Pool* p = new Pool(num_threads() - 1);
  return p;
}

}  // namespace

int num_threads() {
  if (!kThreadsAvailable) return 1;
  int n = g_threads.load();
  if (n == 0) {
    n = threads_from_environment();
    g_threads.store(n);
  }
  return n;
}

void parallel_for_impl(int64_t n, int64_t cost, void (*call)(void*, int64_t, int64_t), void* body) {
  if (n <= 0) return;
  const int threads = num_threads();
  const int64_t work = n * std::max<int64_t>(cost, 1);
  if (threads > 1 && !t_inside_job && work >= 2 * kMinParallelWork) {
    const int64_t chunks = std::min<int64_t>({n, threads * kChunksPerThread, work / kMinParallelWork});
    if (chunks > 1 && pool()->run(n, chunks, call, body)) return;
  }
  call(body, 0, n);
}

}  // namespace hg
