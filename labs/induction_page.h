// labs/induction_page.h — the page `induction --live FILE` writes: "What Attention Computes"
// (Sections 10.6.2–10.6.3) live. One self-contained HTML file holds the trained 2-block model (its
// safetensors bytes, base64), the lab's own figures for the page's batch, and the library built as
// WebAssembly with the model's requests (labs/induction_live.h, the module handgradInduction);
// the page's scripts (viz/induction_*.js: the drawing kit, the sequence, the maps, the charts, the
// batch, the circuits, the link, and induction_live.js, which holds the state and asks) draw the
// heads, losses, ablations, gradients and circuits, every number asked of the module in the
// browser. No request leaves the page.
#pragma once
#include <nlohmann/json.hpp>

#include <string>

namespace hg::lab::induction {

// `lab`: what the page shows beside its own numbers (viz/induction_live.js reads it from
// <script id="hg-induction-lab">); `model`: the safetensors bytes; `module_js`: the module's
// script (read_live_module(path, "handgradInduction")).
std::string induction_page_html(const std::string& module_js, const std::string& model, const nlohmann::json& lab);

// RFC 4648 base64 of `bytes`, with padding.
std::string base64(const std::string& bytes);

}  // namespace hg::lab::induction
