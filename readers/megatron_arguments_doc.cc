// Prints docs/megatron-arguments.md from the argument table.
#include <iostream>

#include "readers/megatron_arguments.h"

int main() {
  std::cout << memgate::MegatronArgumentsMarkdown();
  return 0;
}
