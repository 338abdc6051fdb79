// tinycharlm_page FILE — writes the page of one TinyCharLM block's loss (tests/browser/tinycharlm_page.h)
// for the browser test to walk.
#include <fmt/format.h>

#include "handgrad.h"
#include "browser/tinycharlm_page.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    fmt::print(stderr, "usage: tinycharlm_page FILE.html\n");
    return 2;
  }
  try {
    auto page = hg::test::tinycharlm_page();
    hg::write_html(argv[1], hg::to_html(page->loss, page->options));
    fmt::print("wrote {}\n", argv[1]);
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return 1;
  }
  return 0;
}
