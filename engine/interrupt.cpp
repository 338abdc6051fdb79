// engine/interrupt.cpp — the installed poll (engine/interrupt.h).
#include "engine/interrupt.h"

#include <atomic>

namespace hg {

namespace {
std::atomic<InterruptPoll> g_poll{nullptr};
}

InterruptPoll set_interrupt_poll(InterruptPoll poll) { return g_poll.exchange(poll); }

void check_interrupt() {
  if (InterruptPoll poll = g_poll.load(std::memory_order_relaxed)) poll();
}

}  // namespace hg
