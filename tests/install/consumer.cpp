// Uses the installed headers and library: d/dx sum(x * x) = 2x.
#include <handgrad.h>

#include <cstdio>

int main() {
  using namespace hg;
  Tensor x = tensor({1.0, 2.0, 3.0}, {3}, DType::f64).requires_grad_();
  sum(x * x).backward();
  std::vector<double> g = x.grad().to_vector();
  bool ok = g == std::vector<double>{2.0, 4.0, 6.0};
  std::printf("consumer: grad = (%g, %g, %g) %s\n", g[0], g[1], g[2], ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
