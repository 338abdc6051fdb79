# tests/wasm/wasm-kit.sh — what the WebAssembly checks share (sourced by run-wasm-check and
# run-induction-check): the tools they need, and one target built in the library's WebAssembly build.

# Prints "SKIPPED: <why>" and exits 0 without Emscripten's emcmake or node; else sets NODE_PATH for
# Debian's emscripten (its JavaScript modules, acorn, when node is not Debian's).
wasm_tools_or_skip() {
  command -v emcmake >/dev/null || { echo "SKIPPED: no emcmake (Debian's emscripten; scripts/install-deps installs it)"; exit 0; }
  command -v node >/dev/null || { echo "SKIPPED: no node to run the WebAssembly build"; exit 0; }
  export NODE_PATH=${NODE_PATH:-/usr/share/nodejs}
}

# wasm_build ROOT WASM_BUILD WORK TARGET: TARGET built in WASM_BUILD, configured there with
# `emcmake cmake --preset wasm` the first time, and configured again otherwise (a build the full
# build made for the live page may predate the target; its cache keeps Emscripten). Logs in WORK.
wasm_build() {
  local root=$1 wasm=$2 work=$3 target=$4 start=$SECONDS
  if [[ ! -f "$wasm/CMakeCache.txt" ]]; then
    (cd "$root" && emcmake cmake --preset wasm -B "$wasm" > "$work/configure.log" 2>&1) ||
      { cat "$work/configure.log"; exit 1; }
  else
    cmake -S "$root" -B "$wasm" > "$work/configure.log" 2>&1 || { cat "$work/configure.log"; exit 1; }
  fi
  cmake --build "$wasm" --target "$target" -j"$(nproc)" > "$work/build.log" 2>&1 ||
    { tail -40 "$work/build.log"; exit 1; }
  echo "$(basename "$0"): built $target as WebAssembly in $((SECONDS - start)) s"
}
