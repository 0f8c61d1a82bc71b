// Numbers in messages and range texts: integral values without ".0", others
// as the shortest text that parses back to the same double.
#pragma once

#include <string>

namespace mlk {

std::string number_text(double x);

}  // namespace mlk
