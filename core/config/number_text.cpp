#include "core/config/number_text.h"

#include <locale.h>
#include <stdlib.h>

#include <charconv>
#include <cmath>

#include <nlohmann/json.hpp>

namespace mlk {

std::string number_text(double x) {
    if (std::isfinite(x) && x == std::floor(x) && std::abs(x) <= 9007199254740992.0)
        return std::to_string(static_cast<long long>(x));
    if (std::isnan(x)) return "nan";
    if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
    return nlohmann::json(x).dump();  // nlohmann's shortest round-trip dtoa
}

namespace {

// to_chars with a format and precision is specified as printf in the "C" locale.
std::string chars_text(double x, std::chars_format format, int precision) {
    char buf[400];  // "%.17f" of 1.8e308: 309 digits, a point and 17 decimals
    return std::string(buf, std::to_chars(buf, buf + sizeof buf, x, format, precision).ptr);
}

}  // namespace

std::string general_text(double x, int significant) { return chars_text(x, std::chars_format::general, significant); }

std::string fixed_text(double x, int decimals) { return chars_text(x, std::chars_format::fixed, decimals); }

double c_strtod(const char* text, char** end) {
    static const locale_t c_locale = newlocale(LC_ALL_MASK, "C", nullptr);
    return strtod_l(text, end, c_locale);
}

}  // namespace mlk
