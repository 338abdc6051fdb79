// labs/three_token_live.h — the live page's one call: the three-token example for inputs a learner
// typed, computed by the library (in the browser, its WebAssembly build: three_token_live_wasm.cpp)
// and returned as the JSON the page draws.
//
// The request, as JSON:
//   {"Q": [[1,0],[0,1],[1,1]], "K": [[...]], "V": [[...]],   rows of numbers; K has Q's shape,
//                                                            V one row per token
//    "mask": true, "scale": true,                            the variant
//    "loss": [2, 1],                                         L = O[2][1] (0-based: the text's o₃,₂)
//    "fault": "none" | "dS" | "dK" | "scale" | "dV",          a backward broken on purpose
//    "jvp": null | {"input": "q", "row": 2, "col": 1}}      forward mode along that entry
// The answer:
//   {"ok": true, "loss": "o₃,₂", "L": 2.0069..., "variant": "causal, scaled by 1/√d_k",
//    "is_text": true (the text's Q, K, V and L), "text_inputs": true (the text's Q, K, V, whatever L),
//    "forward": {"S": {shape, values}, "P": ..., "O": ...},
//    "page": [the step-through page's variant (viz/html.h: page_data)],
//    "report": {the lab's report as --json writes it}, "compared": 21, "mismatches": 0, "tolerance_failures": 0,
//    "tangent": null | {"name": "Q̇ = e₃₂", "S": ..., "P": ..., "O": ..., "O_numeric": ..., "P_numeric": ...,
//                       "O_engine": ..., "dL": ..., "dL_reverse": ...}}
// or {"ok": false, "error": "what is wrong and what to write instead"} for a request it cannot run.
#pragma once
#include <string>

namespace hg::lab {

// Never throws: every error, the library's included, comes back as {"ok": false, "error": ...}.
std::string three_token_live(const std::string& request);

// The bounds the page offers and the call accepts: tokens 1..6, d_k and d_v 1..4.
constexpr int kLiveMaxTokens = 6, kLiveMaxWidth = 4;

}  // namespace hg::lab
