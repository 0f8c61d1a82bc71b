// The strict config reader (config_file.h): nlohmann's SAX parser, which is
// iterative, driving a handler that builds the value and refuses what the DOM
// parser would let through (duplicate keys, unbounded nesting, numbers that
// underflow to 0) or report without the key (numbers that overflow).
#include "core/config/config_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <utility>
#include <vector>

#include "core/config/schema_table.h"

namespace mlk {

using nlohmann::json;
using namespace config_detail;

namespace {

// "line L, column C" of byte `pos` (both 1-based; columns count bytes).
std::string where(std::string_view text, size_t pos) {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < pos && i < text.size(); ++i) {
        if (text[i] == '\n') ++line, col = 1;
        else ++col;
    }
    return "line " + std::to_string(line) + ", column " + std::to_string(col);
}

// A number's text names a non-zero value when its mantissa has a non-zero digit.
bool nonzero_mantissa(std::string_view number) {
    for (char ch : number) {
        if (ch == 'e' || ch == 'E') break;
        if (ch >= '1' && ch <= '9') return true;
    }
    return false;
}

// nlohmann's "[json.exception.parse_error.101] parse error at line 1, column 5:
// syntax error ...; last read: '<token>'; expected ..." as "at line 1, column
// 5: syntax error ...", the token cut short (an unterminated string is the
// whole rest of the file).
std::string syntax_error_text(const std::string& what) {
    std::string s = what;
    if (const auto at = s.find(" at line "); at != std::string::npos) s = s.substr(at + 1);
    const std::string mark = "last read: '";
    if (const auto b = s.find(mark); b != std::string::npos) {
        const size_t t0 = b + mark.size();
        auto t1 = s.find("'; expected", t0);
        if (t1 == std::string::npos) t1 = s.rfind('\'');
        if (t1 != std::string::npos && t1 >= t0)
            s = s.substr(0, t0) + excerpt_text(std::string_view(s).substr(t0, t1 - t0), 40) + s.substr(t1);
    }
    return excerpt_text(s, 400);
}

// Builds the value like nlohmann's DOM parser, with the reader's checks. A
// check that fails stores its message and returns false, which stops the
// parser at once.
class StrictSax {
public:
    explicit StrictSax(std::string_view text) : text_(text) {}

    bool null() { return value(json(nullptr)); }
    bool boolean(bool b) { return value(json(b)); }
    bool number_integer(json::number_integer_t i) { return value(json(i)); }
    bool number_unsigned(json::number_unsigned_t u) { return value(json(u)); }
    bool number_float(json::number_float_t x, const json::string_t& text) {
        if (x == 0 && nonzero_mantissa(text))
            return error(path() + ": the number " + excerpt_text(text) +
                         " is too small for a double (it would read as 0; write 0 for zero)");
        return value(json(x));
    }
    bool string(json::string_t& s) { return value(json(std::move(s))); }
    bool binary(json::binary_t&) { return error(path() + ": binary values are not JSON"); }
    bool start_object(std::size_t) { return open(json::object()); }
    bool key(json::string_t& k) {
        Frame& f = stack_.back();
        f.key = k;
        if (!f.keys.insert(k).second)
            return error(path() +
                         ": given twice in one object (the second would silently replace the first); "
                         "give each key once");
        slot_ = &(*f.value)[k];
        return true;
    }
    bool end_object() { return close(); }
    bool start_array(std::size_t) { return open(json::array()); }
    bool end_array() { return close(); }
    bool parse_error(std::size_t pos, const std::string& last_token, const nlohmann::detail::exception& ex) {
        if (ex.id == 406)  // out_of_range: a number past a double's range
            return error(path() + ": the number " + excerpt_text(last_token) +
                         " is too large for a double (the largest is about 1.8e308), at " +
                         where(text_, pos ? pos - 1 : 0));
        return error("invalid JSON " + syntax_error_text(ex.what()));
    }

    json& root() { return root_; }
    const std::string& message() const { return error_; }

private:
    struct Frame {
        json* value;
        std::string key;  // the key being read, for objects
        std::set<std::string> keys;
    };

    // Dotted path of the key being read ("rollout.top_k"); arrays add nothing.
    std::string path() const {
        std::string p;
        for (const Frame& f : stack_) {
            if (!f.value->is_object()) continue;
            if (!p.empty()) p += '.';
            p += f.key;
        }
        return p.empty() ? "(top level)" : excerpt_text(p, 120);
    }
    json* place(json&& v) {
        if (stack_.empty()) {
            root_ = std::move(v);
            return &root_;
        }
        json& parent = *stack_.back().value;
        if (parent.is_array()) {
            parent.push_back(std::move(v));
            return &parent.back();
        }
        *slot_ = std::move(v);
        return slot_;
    }
    bool value(json&& v) {
        place(std::move(v));
        return true;
    }
    bool open(json&& container) {
        if (stack_.size() >= static_cast<size_t>(kMaxConfigDepth))
            return error(path() + ": nested deeper than " + std::to_string(kMaxConfigDepth) +
                         " levels of objects and arrays (a config needs at most 3)");
        stack_.push_back({place(std::move(container)), {}, {}});
        return true;
    }
    bool close() {
        stack_.pop_back();
        return true;
    }
    bool error(std::string msg) {
        error_ = std::move(msg);
        return false;
    }

    std::string_view text_;
    json root_;
    std::vector<Frame> stack_;
    json* slot_ = nullptr;  // where the value after key() goes
    std::string error_;
};

}  // namespace

json parse_config_text(std::string_view text, const std::string& source) {
    if (text.find_first_not_of(" \t\r\n") == std::string_view::npos)
        fail(source + ": is empty; a config is one JSON object, e.g. {\"rollout\": {\"precision\": \"fp32\"}}");
    // nlohmann's lexer takes a NUL byte for the end of the input and would
    // ignore everything after it.
    if (const auto nul = text.find('\0'); nul != std::string_view::npos)
        fail(source + ": invalid JSON at " + where(text, nul) +
             ": a NUL byte (JSON text has none; inside a string write \\u0000)");
    StrictSax sax(text);
    bool ok = false;
    try {
        ok = json::sax_parse(text.begin(), text.end(), &sax, json::input_format_t::json, /*strict=*/true,
                             /*ignore_comments=*/false);
    } catch (const json::exception& e) {  // not expected from the SAX path; kept a ConfigError if it happens
        fail(source + ": invalid JSON: " + excerpt_text(e.what(), 400));
    }
    if (!ok) fail(source + ": " + (sax.message().empty() ? std::string("invalid JSON") : sax.message()));
    return std::move(sax.root());
}

Config config_merge_text(const Config& base, std::string_view text, const std::string& source) {
    const json j = parse_config_text(text, source);
    try {
        return config_merge_json(base, j);
    } catch (const ConfigError& e) {
        throw ConfigError(source + ": " + e.what());
    }
}

Config config_merge_file(const Config& base, const std::string& path) {
    namespace fs = std::filesystem;
    const std::string source = "config file " + excerpt_text(path, 300);
    if (path.empty()) fail("config file: no path given");
    std::error_code ec;
    const fs::file_status st = fs::status(path, ec);
    if (st.type() == fs::file_type::not_found) fail(source + ": does not exist");
    if (ec) fail(source + ": cannot be read (" + ec.message() + ")");
    if (fs::is_directory(st)) fail(source + ": is a directory, not a JSON file");
    // A FIFO would block until a writer comes, a device may never end: only
    // a file that holds its text is read.
    if (!fs::is_regular_file(st)) {
        const char* kind = st.type() == fs::file_type::fifo        ? "a FIFO (named pipe)"
                           : st.type() == fs::file_type::character ? "a character device"
                           : st.type() == fs::file_type::block     ? "a block device"
                           : st.type() == fs::file_type::socket    ? "a socket"
                                                                   : "not a regular file";
        fail(source + ": is " + kind + "; allowed: a regular JSON file (save a generated config to a file first)");
    }
    const auto size = fs::file_size(path, ec);
    if (!ec && size > kMaxConfigFileBytes)
        fail(source + ": is " + std::to_string(size) + " bytes; a config file is a few KB of JSON (at most " +
             std::to_string(kMaxConfigFileBytes) + " bytes are read)");
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(source + ": cannot be read (" + std::strerror(errno) + ")");
    // Bounded even if the file grows while it is read.
    std::string text;
    std::vector<char> buf(1 << 16);
    while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0) {
        text.append(buf.data(), static_cast<size_t>(in.gcount()));
        if (text.size() > kMaxConfigFileBytes)
            fail(source + ": is longer than " + std::to_string(kMaxConfigFileBytes) +
                 " bytes; a config file is a few KB of JSON");
    }
    if (in.bad()) fail(source + ": cannot be read (a read error)");
    return config_merge_text(base, text, source);
}

}  // namespace mlk
