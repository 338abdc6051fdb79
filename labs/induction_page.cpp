// labs/induction_page.cpp — see induction_page.h.
#include "induction_page.h"

#include <fmt/format.h>

#include <initializer_list>

#include "viz/page_assets.h"

namespace hg::lab::induction {

std::string base64(const std::string& bytes) {
  static constexpr char kDigits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  size_t i = 0;
  auto byte = [&](size_t k) { return static_cast<uint32_t>(static_cast<unsigned char>(bytes[k])); };
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t v = byte(i) << 16 | byte(i + 1) << 8 | byte(i + 2);
    for (int s = 18; s >= 0; s -= 6) out += kDigits[(v >> s) & 63];
  }
  if (const size_t rest = bytes.size() - i; rest > 0) {
    const uint32_t v = byte(i) << 16 | (rest == 2 ? byte(i + 1) << 8 : 0);
    out += kDigits[(v >> 18) & 63];
    out += kDigits[(v >> 12) & 63];
    out += rest == 2 ? kDigits[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string induction_page_html(const std::string& module_js, const std::string& model, const nlohmann::json& lab) {
  // The lab's JSON sits inside a <script> element: "</" written as "<\/" keeps it from ending there
  // (JSON reads both alike).
  std::string data = lab.dump();
  for (size_t at = data.find("</"); at != std::string::npos; at = data.find("</", at + 3)) data.replace(at, 2, "<\\/");
  // The page's script: one <script> for each of its files in viz/, in the order they run: the parts
  // first, then induction_live.js, which reads them (viz/page_assets.h).
  std::string scripts;
  for (const char* script :
       {induction_page_draw_script(), induction_page_sequence_script(), induction_page_maps_script(),
        induction_page_charts_script(), induction_page_batch_script(), induction_page_circuits_script(),
        induction_page_link_script(), induction_page_script()})
    scripts += fmt::format("<script>{}</script>\n", script);
  return fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
      "script-src 'unsafe-inline' 'wasm-unsafe-eval'; connect-src data:; img-src data:\">\n"
      "<title>What Attention Computes, live: induction heads in the trained model</title>\n"
      "<style>{}{}</style></head>\n<body class=\"induction\">\n{}\n"
      "<script id=\"hg-induction-model\" type=\"application/octet-stream\">{}</script>\n"
      "<script id=\"hg-induction-lab\" type=\"application/json\">{}</script>\n"
      "<script>{}</script>\n{}</body></html>\n",
      html_page_style(), induction_page_style(), induction_page_body(), base64(model), data, module_js, scripts);
}

}  // namespace hg::lab::induction
