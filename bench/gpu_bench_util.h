// bench/gpu_bench_util.h — what the GPU benchmarks (bench/bench_gpu_*.cpp) share: finding and
// running their PyTorch peer, reading its one line of JSON, and the median.
//
// The peer protocol: the peer prints, as the last line of its output that starts with '{', one
// JSON object — its figures on success, or {"error": "<why>"} (exit status 0) where torch or
// CUDA in torch is missing. The benchmark then prints "PyTorch peer: not available (<why>)" and
// still exits 0.
#pragma once
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/backend.h"

namespace hg::bench {

inline double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// "a,b,c" as {"a", "b", "c"} (an option's list).
inline std::vector<std::string> comma_list(const std::string& text) {
  std::vector<std::string> items;
  for (size_t p = 0; p <= text.size();) {
    const size_t comma = std::min(text.find(',', p), text.size());
    items.push_back(text.substr(p, comma - p));
    p = comma + 1;
  }
  return items;
}

// `text` as a whole number, or std::runtime_error naming the option it was given to.
inline int64_t whole_number(const std::string& option, const std::string& text) {
  size_t used = 0;
  int64_t n = 0;
  try {
    n = std::stoll(text, &used);
  } catch (const std::exception&) {
  }
  if (used == 0 || used != text.size()) throw std::runtime_error(option + " takes whole numbers, not '" + text + "'");
  return n;
}

// Hands each flag of argv to take(flag, next), where next() reads the word after it (an error
// naming the flag when there is none); take returns whether it knew the flag. --help and -h print
// `usage` and exit 0; a flag take does not know is an error that points at --help.
template <typename Take>
void each_flag(int argc, char** argv, const char* usage, Take take) {
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::runtime_error("missing value after " + flag);
      return argv[++i];
    };
    if (flag == "--help" || flag == "-h") {
      std::fputs(usage, stdout);
      std::exit(0);
    }
    if (!take(flag, next)) throw std::runtime_error("unknown option " + flag + " (see --help)");
  }
}

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The interpreter for the peers: $HANDGRAD_PYTHON, else python3.
inline std::string default_python() {
  const char* p = std::getenv("HANDGRAD_PYTHON");
  return p && *p ? p : "python3";
}

// The flags of a bench timed beside PyTorch: --no-torch (handgrad alone) and --python EXE (the
// peer's interpreter).
struct PeerFlags {
  bool torch = true;
  std::string python = default_python();
  template <typename Next>
  bool take(const std::string& flag, Next next) {
    if (flag == "--no-torch") torch = false;
    else if (flag == "--python") python = next();
    else return false;
    return true;
  }
};

// bench/<name>: the folder named by the environment's HANDGRAD_BENCH_DIR (a program carried to
// another machine, where the source tree sits elsewhere: scripts/gpu-check sets it), else the one
// bench/CMakeLists.txt passes as HANDGRAD_BENCH_DIR, else this header's own folder.
inline std::string peer_script(const std::string& name) {
  if (const char* dir = std::getenv("HANDGRAD_BENCH_DIR"); dir && *dir) return std::string(dir) + "/" + name;
#ifdef HANDGRAD_BENCH_DIR
  return std::string(HANDGRAD_BENCH_DIR) + "/" + name;
#else
  const std::string here = __FILE__;
  const size_t slash = here.find_last_of('/');
  return (slash == std::string::npos ? std::string("bench") : here.substr(0, slash)) + "/" + name;
#endif
}

// Runs `python script args` (args already quoted as the shell needs), stdout and stderr together.
// Returns the peer's JSON object when it holds `key` and the peer exited 0; otherwise nullopt,
// with the reason in *why (the peer's "error", or its exit status and last line).
// When HANDGRAD_PEER_LD_LIBRARY_PATH is set (scripts/gpu-check sets it to the path as it was before
// it added CUDA's libraries for handgrad's programs), the peer runs with LD_LIBRARY_PATH set back to
// it (unset when empty), so PyTorch loads the CUDA libraries it ships with.
inline std::optional<nlohmann::json> run_peer(const std::string& python, const std::string& script,
                                              const std::string& args, const char* key, std::string* why) {
  std::string env;
  if (const char* peer_path = std::getenv("HANDGRAD_PEER_LD_LIBRARY_PATH"))
    env = *peer_path ? fmt::format("env LD_LIBRARY_PATH={} ", shell_quote(peer_path)) : "env -u LD_LIBRARY_PATH ";
  const std::string cmd = fmt::format("{}{} {} {} 2>&1", env, shell_quote(python), shell_quote(script), args);
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) {
    *why = "could not start " + python;
    return std::nullopt;
  }
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, p)) > 0;) out.append(buf, n);
  const int status = pclose(p);
  // The JSON is the last line that starts with '{' (warnings on stderr may come after it).
  std::string json_line, last_line;
  for (size_t pos = 0; pos < out.size();) {
    const size_t end = std::min(out.find('\n', pos), out.size());
    const std::string line = out.substr(pos, end - pos);
    if (!line.empty()) last_line = line;
    if (line.starts_with("{")) json_line = line;
    pos = end + 1;
  }
  const nlohmann::json j = nlohmann::json::parse(json_line, nullptr, /*allow_exceptions=*/false);
  const bool exited_ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (j.is_object() && j.contains(key) && exited_ok) return j;
  if (j.is_object() && j.contains("error"))
    *why = j["error"].is_string() ? j["error"].get<std::string>() : j["error"].dump();
  else
    *why = fmt::format("{} exited with status {}: {}", python, WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                       last_line.empty() ? "no output" : last_line);
  return std::nullopt;
}

// A GPU benchmark's main around its body: flags that parse refuses give their reason and exit
// status 2; without a usable GPU it says why it skipped and exits 0; an error in the body (an
// hg::Error, or anything else that stops the run) gives its reason and exit status 1. The body
// returns the exit status.
template <typename Parse, typename Body>
int gpu_bench_main(const char* name, int argc, char** argv, Parse parse, Body body) {
  decltype(parse(argc, argv)) args;
  try {
    args = parse(argc, argv);
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: {}\n", name, e.what());
    return 2;
  }
  try {
    const auto* cu = cuda_backend();
    if (!cu || !cu->device_available()) {
      fmt::print("{}: skipped: {}\n", name, cu ? cu->device_summary() : "built without CUDA");
      return 0;
    }
    return body(args, *cu);
  } catch (const std::exception& e) {
    fmt::print(stderr, "{}: {}\n", name, e.what());
    return 1;
  }
}

}  // namespace hg::bench
