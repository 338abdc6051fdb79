// tests/wasm/three_token_numbers.cpp — Section 3's three-token example through the library, every
// number printed to 17 digits: the forward (S, P, O), L = o₃,₂, the trace's backward (dP, dS) and
// the tape's gradients (dQ, dK, dV), then a dim error caught as an hg::IndexError. Built natively
// and as WebAssembly (the `wasm` preset, run by node); ctest's wasm_three_token holds the two
// builds' numbers to each other (tests/wasm/run-wasm-check), which is what the live page needs:
// the library in the browser computing what the library computes natively.
#include <cstdio>
#include <string>

#include "handgrad.h"

using namespace hg;

namespace {

void print(const char* name, const Tensor& t) {
  std::printf("%s", name);
  for (double v : t.to_vector()) std::printf(" %.17g", v);
  std::printf("\n");
}

}  // namespace

int main() {
  try {
    // The text's Q, K = Q and V (Module 6, Section 3), causal, scaled by 1/sqrt(d_k).
    Tensor q = tensor({1, 0, 0, 1, 1, 1}, {3, 2}, DType::f64).requires_grad_();
    Tensor k = q.detach().clone().requires_grad_();
    Tensor v = tensor({1, 0, 0, 2, 3, 3}, {3, 2}, DType::f64).requires_grad_();
    const AttentionOptions opts{.causal = true};
    Tensor o = attention(q, k, v, opts);
    Tensor loss = o.index({2, 1});  // L = o_{3,2}
    loss.backward();
    Tensor dO = zeros({3, 2}, DType::f64);
    dO.set_at({2, 1}, 1.0);
    const AttentionTrace t = attention_trace(q.detach(), k.detach(), v.detach(), dO, opts);
    print("S", t.S);
    print("P", t.P);
    print("O", o.detach());
    print("L", loss.detach());
    print("dP", t.dP);
    print("dS", t.dS);
    print("dQ", q.grad());
    print("dK", k.grad());
    print("dV", v.grad());
    try {
      scalar(1.0, DType::f64).squeeze(-2);
      std::printf("error none\n");
    } catch (const IndexError& e) {
      std::printf("error %s\n", e.what());
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "three_token_numbers: %s\n", e.what());
    return 1;
  }
  return 0;
}
