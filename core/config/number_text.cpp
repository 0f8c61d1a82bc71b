#include "core/config/number_text.h"

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

}  // namespace mlk
