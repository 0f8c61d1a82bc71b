// Numbers as text and back, always with '.' for the decimal point. The
// workbench's QApplication sets the C library's locale from the user's, where
// printf and strtod write and read "0,5"; a number stored, exported or parsed
// under a German or French locale must not change on the way.
#pragma once

#include <string>

namespace mlk {

// Numbers in messages and range texts: integral values without ".0", others
// as the shortest text that parses back to the same double.
std::string number_text(double x);

// printf's "%.*g" and "%.*f" as the "C" locale writes them.
std::string general_text(double x, int significant);
std::string fixed_text(double x, int decimals);

// strtod as the "C" locale reads: leading blanks, a sign, hex, inf and nan.
double c_strtod(const char* text, char** end);

}  // namespace mlk
