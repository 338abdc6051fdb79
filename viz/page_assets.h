// viz/page_assets.h — the fixed parts of the step-through page, each a file of its own in viz/
// (page.css, page_body.html, page.js; the live page's live.css, live_body.html, live.js), embedded
// as strings when the library is built (viz/page_assets.cpp.in, filled in by CMake).
//
// page.js reads the JSON that to_html writes into <script id="hg-data"> (an array of variants,
// each {name, title, intro, root, table_limit, svg, nodes[], steps[]}) and draws everything else;
// live.js edits the three-token example's inputs and asks the WebAssembly build of the library
// for that JSON again on every edit. induction_live.js is the induction page's (labs/induction_page.h):
// the trained model's heads, losses, ablations and gradients, asked of the WebAssembly build; its
// parts run before it, each drawing one thing (induction_draw.js: numbers as text, colour maps, canvases;
// induction_sequence.js: the sequence and its fields; induction_maps.js: the attention maps;
// induction_charts.js: the loss chart, gradient bars and accuracy curve; induction_batch.js: the
// batch's figures; induction_circuits.js: the QK and OV circuits; induction_link.js: the URL's
// fragment).
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
// The induction page's parts, in the order they run, then induction_live.js.
const char* induction_page_draw_script();
const char* induction_page_sequence_script();
const char* induction_page_maps_script();
const char* induction_page_charts_script();
const char* induction_page_batch_script();
const char* induction_page_circuits_script();
const char* induction_page_link_script();
const char* induction_page_script();

}  // namespace hg
