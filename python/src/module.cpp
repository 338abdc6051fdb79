// python/src/module.cpp — the extension module handgrad._C: one call per area.
#include "bind.h"

#ifndef HANDGRAD_VERSION
#define HANDGRAD_VERSION "unknown"
#endif

NB_MODULE(_C, m) {
  m.doc() = "handgrad's C++ library, bound thinly; import handgrad, not this module";
  m.attr("__version__") = HANDGRAD_VERSION;
  hgpy::bind_dtypes(m);
  hgpy::bind_tensor(m);
  hgpy::bind_ops(m);
  hgpy::bind_arith(m);
  hgpy::bind_autograd(m);
  hgpy::bind_functional(m);
  hgpy::bind_interop(m);
  hgpy::bind_nn(m);
  hgpy::bind_page(m);
  hgpy::bind_rearrange(m);
  hgpy::bind_compare(m);
}
