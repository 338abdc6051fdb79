// labs/output.h — what a lab puts out: the lines it prints, each fitting in kLineWidth columns (a
// longer one broken at spaces; Report::say and the labs' own tables print through here), and the
// files it writes, each write checked.
#pragma once
#include <cstddef>
#include <string>

namespace hg::lab {

// The widest line a lab prints, in characters (UTF-8 code points).
constexpr size_t kLineWidth = 100;
// Prints `text` to stdout, each line wider than kLineWidth broken at its last space that fits; the
// rest continues on the next line, indented two past the line's own indent. A line with no such
// space (a long path) is printed whole.
void print_wrapped(const std::string& text);

// Writes `content` to `path` and checks every step (open, write, close): an hg::Error names `who`,
// the file and the reason ("cannot write", "writing failed: is the disk full?").
void write_file(const std::string& path, const std::string& content, const std::string& who);

}  // namespace hg::lab
