// A C library locale whose decimal point is a comma, as QApplication sets
// under LANG=de_DE.UTF-8 or fr_FR.UTF-8. Debian's locales package may be
// absent (CI, a minimal install), so it is compiled here with localedef
// (libc-bin, which is Essential) into a scratch folder that LOCPATH names.
#pragma once

#include <clocale>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace mlk::testing_locale {

inline constexpr const char* kCommaLocale = "mlk_comma";

// Compiles the locale into `dir` (a locale with only LC_NUMERIC defined,
// over a charmap of the few characters that definition names) and sets
// LOCPATH; then setlocale(LC_NUMERIC, kCommaLocale) selects it.
inline void build_comma_locale(const std::filesystem::path& dir) {
    std::ofstream(dir / "comma.def") << "LC_NUMERIC\ndecimal_point \",\"\nthousands_sep \".\"\ngrouping 3;3\n"
                                        "END LC_NUMERIC\n";
    std::ofstream(dir / "comma.map") << "<code_set_name> MLK_COMMA\n<mb_cur_max> 1\n<mb_cur_min> 1\nCHARMAP\n"
                                        "<U002C> /x2c COMMA\n<U002E> /x2e FULL STOP\nEND CHARMAP\n";
    // -c: the other categories are missing on purpose; localedef warns and writes.
    const std::string cmd = "localedef -c -i '" + (dir / "comma.def").string() + "' -f '" +
                            (dir / "comma.map").string() + "' '" + (dir / kCommaLocale).string() + "' >/dev/null 2>&1";
    std::system(cmd.c_str());
    setenv("LOCPATH", dir.c_str(), 1);
}

// Selects the comma locale for LC_NUMERIC; an empty text when it is in
// effect, else why not (the caller fails: a suite under the "C" locale would
// prove nothing).
inline std::string use_comma_locale() {
    if (!std::setlocale(LC_NUMERIC, kCommaLocale))
        return std::string("localedef (libc-bin) could not build a comma locale in ") +
               (std::getenv("LOCPATH") ? std::getenv("LOCPATH") : "(LOCPATH unset)");
    char buf[16];
    std::snprintf(buf, sizeof buf, "%g", 0.5);
    return buf == std::string("0,5") ? "" : "the comma locale writes 0.5 as " + std::string(buf);
}

}  // namespace mlk::testing_locale
