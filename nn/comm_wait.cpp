// nn/comm_wait.cpp — the polling wait of nn/comm_wait.h and its time limit.
#include "nn/comm_wait.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <string_view>
#include <thread>

#include "engine/error.h"

namespace hg::nn {

void wait_for_collective(const std::string& who, const char* op, double limit_s, const CollectiveWait& hooks) {
  const double start = hooks.now_s();
  while (!hooks.done()) {
    std::string why;
    if (const std::string error = hooks.async_error(); !error.empty())
      why = fmt::format("NCCL reports an asynchronous error: {}", error);
    const double waited = hooks.now_s() - start;
    if (why.empty() && waited > limit_s)
      why = fmt::format("not finished after {} s (HANDGRAD_NCCL_TIMEOUT_S), and NCCL reports no error: a peer is gone "
                        "or stuck; raise HANDGRAD_NCCL_TIMEOUT_S if a step really takes that long", limit_s);
    if (!why.empty()) {
      const std::string message = fmt::format("{}: {}: {}", who, op, why);
      hooks.abort(message);
      throw Error(message);
    }
    // The first millisecond spins (a step's all-reduce often ends within it); after that a poll
    // every 100 µs costs a core nothing and adds at most that to the step.
    if (waited < 1e-3) std::this_thread::yield();
    else std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

double collective_timeout_s(const Getenv& env) {
  const char* value = env("HANDGRAD_NCCL_TIMEOUT_S");
  if (!value) return 600;
  char* end = nullptr;
  const double s = std::strtod(value, &end);
  if (std::string_view(value).empty() || *end != '\0' || !std::isfinite(s) || s <= 0)
    fail("world", "HANDGRAD_NCCL_TIMEOUT_S='{}' is not a positive number of seconds; set it to one (how long a rank "
         "waits for a collective before it ends the job), or unset it for 600", value);
  return s;
}

}  // namespace hg::nn
