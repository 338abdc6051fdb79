// Gradcheck cases for nn (to be filled in).
#include "gradcheck_cases.h"

namespace hg::cases {

void add_nn_cases(std::vector<GradcheckCase>& out, Generator& gen) { (void)out; (void)gen; }

}  // namespace hg::cases
