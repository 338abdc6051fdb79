// labs/three_token_live_wasm.cpp — the live page's module: three_token_live (three_token_live.h)
// exported to JavaScript by embind, as handgradLive().then((m) => m.threeTokenLive(request)).
#include <emscripten/bind.h>

#include "three_token_live.h"

EMSCRIPTEN_BINDINGS(handgrad_live) { emscripten::function("threeTokenLive", &hg::lab::three_token_live); }
