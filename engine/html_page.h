// engine/html_page.h — the fixed parts of to_html's page: its CSS, its body, its JavaScript.
// The script reads the JSON that to_html writes into <script id="hg-data"> (an array of variants,
// each {name, title, intro, root, table_limit, svg, nodes[], steps[]}) and draws everything else.
#pragma once

namespace hg {

const char* html_page_style();
const char* html_page_body();
const char* html_page_script();

}  // namespace hg
