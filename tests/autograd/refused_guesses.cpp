// Torch spellings that must not compile, each behind its own macro (tests/CMakeLists.txt compiles the
// file once per case and expects the error that explains it, and once without any, which must
// compile): x.view, which could only copy here, and writes into a temporary copy, which would leave x
// as it was.
#include "tapegrad/autograd/factories.hpp"

using namespace tapegrad;

int main() {
  auto x = zeros({2, 3});
#if defined(REFUSED_VIEW_SIZES)
  auto v = x.view(3, 2);
#elif defined(REFUSED_VIEW_LIST)
  auto v = x.view({6});
#elif defined(REFUSED_ASSIGN_TO_PART)
  x[0] = ones({3});
#elif defined(REFUSED_ADD_TO_PART)
  x[0] += 1.0f;
#elif defined(REFUSED_FILL_PART)
  x.select(0, 1).fill_(0);
#endif
  return x.dim() == 2 ? 0 : 1;
}
