// viz/live_page.cpp — the live page: the step-through page (viz/page.js) driven by live.js, which
// edits the three-token example's inputs and asks the library, built as WebAssembly, for the page's
// data again on every edit. The module's script is inlined: one file, no network request.
#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "engine/error.h"
#include "viz/html.h"
#include "viz/page_assets.h"

namespace hg {

std::string read_live_module(const std::string& path, const std::string& export_name) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    fail("live page", "its WebAssembly module is not at '{}'. The full build makes it when Emscripten is installed "
         "(scripts/install-deps installs it; then cmake -S . -B build && cmake --build build)", path);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string js = ss.str();
  if (js.find(export_name) == std::string::npos)
    fail("live page", "'{}' is not the live page's module (no {} in it); build it again", path, export_name);
  // The module sits inside the page's <script>: a "</script" in it would end that element early.
  if (js.find("</script") != std::string::npos)
    fail("live page", "'{}' holds \"</script\", which would end the page's script; it cannot be inlined", path);
  return js;
}

std::string live_page_html(const std::string& module_js) {
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
      "script-src 'unsafe-inline' 'wasm-unsafe-eval'; connect-src data:; img-src data:\">\n"
      "<title>three tokens, live: the backward pass of attention</title>\n<style>{}{}</style></head>\n<body class=\"live\">\n"
      "{}\n{}\n<script id=\"hg-data\" type=\"application/json\">[]</script>\n<script>{}</script>\n<script>{}</script>\n"
      "<script>{}</script>\n</body></html>\n",
      html_page_style(), live_page_style(), live_page_body(), html_page_body(), module_js, html_page_script(),
      live_page_script());
}

}  // namespace hg
