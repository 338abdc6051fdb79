// engine/interrupt.h — how a long call stops when its user asks: backward checks between nodes and
// gradcheck between perturbed elements. A front end that can be interrupted (the Python package,
// on Ctrl-C) installs a poll; it may throw, and what it throws ends the call, unwinding as any
// error does. Without a poll, a check costs one atomic load.
#pragma once

namespace hg {

using InterruptPoll = void (*)();

// Installs the poll (nullptr removes it); returns the one it replaces.
InterruptPoll set_interrupt_poll(InterruptPoll poll);

// Calls the installed poll, if any.
void check_interrupt();

}  // namespace hg
