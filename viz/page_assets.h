// viz/page_assets.h — the fixed parts of the step-through page, each a file of its own in viz/
// (page.css, page_body.html, page.js; the live page's live.css, live_body.html, live.js), embedded
// as strings when the library is built (viz/page_assets.cpp.in, filled in by CMake).
//
// page.js reads the JSON that to_html writes into <script id="hg-data"> (an array of variants,
// each {name, title, intro, root, table_limit, svg, nodes[], steps[]}) and draws everything else;
// live.js edits the three-token example's inputs and asks the WebAssembly build of the library
// for that JSON again on every edit. induction_live.js is the induction page's (labs/induction_page.h):
// the trained model's heads, losses, ablations and gradients, asked of the WebAssembly build.
#pragma once

namespace hg {

const char* html_page_style();
const char* html_page_body();
const char* html_page_script();
const char* live_page_style();
const char* live_page_body();
const char* live_page_script();
const char* induction_page_style();
const char* induction_page_body();
const char* induction_page_script();

}  // namespace hg
