// labs/induction_live_wasm.cpp — the induction page's module: the trained model (induction_live.h)
// exported to JavaScript by embind. inductionLoad(bytes) takes the model's safetensors bytes (a
// Uint8Array) and returns "" or why they cannot be read; inductionAnswer(request) answers one JSON
// request with one JSON answer.
#include <emscripten/bind.h>

#include <memory>
#include <string>

#include "induction_live.h"

namespace {

std::unique_ptr<hg::lab::induction::InductionLive> g_model;

std::string induction_load(const std::string& bytes) {
  try {
    g_model = std::make_unique<hg::lab::induction::InductionLive>(
        std::span<const std::byte>(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()));
    return "";
  } catch (const std::exception& e) {
    g_model.reset();
    return e.what();
  }
}

std::string induction_answer(const std::string& request) {
  if (!g_model) return R"({"ok": false, "error": "no model is loaded: inductionLoad(bytes) first"})";
  return g_model->answer(request);
}

}  // namespace

EMSCRIPTEN_BINDINGS(handgrad_induction) {
  emscripten::function("inductionLoad", &induction_load);
  emscripten::function("inductionAnswer", &induction_answer);
}
