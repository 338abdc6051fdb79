#include "output.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <string_view>

#include "engine/error.h"

namespace hg::lab {

namespace {

// How many characters (UTF-8 code points) s holds.
size_t columns(std::string_view s) {
  return static_cast<size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (c & 0xC0) != 0x80; }));
}

// One line (no newline) broken at spaces into lines of at most kLineWidth characters.
void print_line_wrapped(std::string_view line) {
  const size_t indent = std::min(line.find_first_not_of(' '), line.size());
  const std::string more(std::min<size_t>(indent + 2, kLineWidth / 2), ' ');
  std::string_view lead;  // empty on the first line, `more` after
  while (columns(lead) + columns(line) > kLineWidth) {
    // The last space at which the line still fits, past its indent.
    size_t cut = std::string_view::npos, width = columns(lead);
    for (size_t i = 0; i < line.size() && width <= kLineWidth; ++i) {
      if (line[i] == ' ' && i > indent) cut = i;
      if ((line[i] & 0xC0) != 0x80) ++width;
    }
    if (cut == std::string_view::npos) break;  // no space to break at: print it whole
    fmt::print("{}{}\n", lead, line.substr(0, cut));
    line.remove_prefix(std::min(line.find_first_not_of(' ', cut), line.size()));
    lead = more;
  }
  fmt::print("{}{}\n", lead, line);
}
}  // namespace

void print_wrapped(const std::string& text) {
  std::string_view rest = text;
  while (!rest.empty()) {
    const size_t nl = rest.find('\n');
    if (nl == std::string_view::npos) {  // a last piece without its newline
      const std::string tail(rest);
      if (columns(tail) <= kLineWidth) fmt::print("{}", tail);
      else print_line_wrapped(tail);
      return;
    }
    print_line_wrapped(rest.substr(0, nl));
    rest.remove_prefix(nl + 1);
  }
}

void write_file(const std::string& path, const std::string& content, const std::string& who) {
  std::ofstream f(path, std::ios::binary);
  if (!f) fail(who, "cannot write '{}' (does its folder exist? is it writable?)", path);
  f.write(content.data(), static_cast<std::streamsize>(content.size()));
  f.close();  // the write is only known to have reached the file once it is closed
  if (!f) fail(who, "writing '{}' failed after {} bytes were given to it (is the disk full?)", path, content.size());
}

}  // namespace hg::lab
