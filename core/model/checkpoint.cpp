#include "core/model/checkpoint.h"

#include <bit>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <set>
#include <sstream>

#include "core/config/atomic_file.h"
#include "kernels/dtype.h"

namespace mlk {

static_assert(std::endian::native == std::endian::little, "safetensors I/O assumes a little-endian host");

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

std::string shape_text(const std::vector<int64_t>& s) {
    std::string t = "[";
    for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
    return t + "]";
}

size_t dtype_size(const std::string& d) {
    if (d == "F32") return 4;
    if (d == "F16" || d == "BF16") return 2;
    if (d == "F64") return 8;
    return 0;  // unsupported for reading as floats
}

// Known safetensors dtypes (for a precise "unsupported" message vs "corrupt").
size_t any_dtype_size(const std::string& d) {
    static const std::map<std::string, size_t> sizes = {
        {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
        {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4},     {"F64", 8},     {"I64", 8}, {"U64", 8}};
    auto it = sizes.find(d);
    return it == sizes.end() ? 0 : it->second;
}

// ---- file helpers ---------------------------------------------------------
std::string errno_text() { return std::strerror(errno); }

// Every file of a checkpoint is written whole or not at all
// (core/config/atomic_file.h), failing as the checkpoint code fails.
using ByteWriter = ByteSink;
void write_atomic(const std::string& path, const std::function<void(const ByteWriter&)>& produce) {
    try {
        write_file_atomically(path, produce);
    } catch (const CheckpointError&) {
        throw;
    } catch (const std::runtime_error& e) {
        checkpoint_fail(e.what());
    }
}

void write_atomic(const std::string& path, const std::vector<std::pair<const void*, size_t>>& parts) {
    write_atomic(path, [&](const ByteWriter& write) {
        for (const auto& [ptr, n] : parts) write(ptr, n);
    });
}

std::vector<unsigned char> read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) checkpoint_fail("cannot open " + path + ": " + errno_text());
    f.seekg(0, std::ios::end);
    const auto size = f.tellg();
    if (size < 0) checkpoint_fail("cannot read " + path);
    f.seekg(0, std::ios::beg);
    std::vector<unsigned char> b(static_cast<size_t>(size));
    if (size > 0 && !f.read(reinterpret_cast<char*>(b.data()), size)) checkpoint_fail("cannot read " + path);
    return b;
}

std::string new_save_id() {
    std::random_device rd;
    const uint64_t t = static_cast<uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
    const uint64_t r = (static_cast<uint64_t>(rd()) << 32) ^ rd() ^ (t * 0x9e3779b97f4a7c15ull);
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(r));
    return buf;
}

// Arena tensor -> HF layout (transposed back to [out, in] for linear weights).
void to_hf(const ParamSpec& s, const float* arena, float* out) {
    const float* src = arena + s.offset;
    if (!s.transposed) {
        std::memcpy(out, src, static_cast<size_t>(s.numel) * sizeof(float));
        return;
    }
    const int64_t K = s.shape[0], N = s.shape[1];  // arena [in=K, out=N]
    for (int64_t k = 0; k < K; ++k)
        for (int64_t n = 0; n < N; ++n) out[n * K + k] = src[k * N + n];
}

void from_hf(const ParamSpec& s, const float* in, float* arena) {
    float* dst = arena + s.offset;
    if (!s.transposed) {
        std::memcpy(dst, in, static_cast<size_t>(s.numel) * sizeof(float));
        return;
    }
    const int64_t K = s.shape[0], N = s.shape[1];
    for (int64_t k = 0; k < K; ++k)
        for (int64_t n = 0; n < N; ++n) dst[k * N + n] = in[n * K + k];
}

// The arena's tensors in HF layout, written from the arena itself: a tensor
// stored as HF stores it is written in place, a transposed one through the
// writer's one-tensor buffer. A copy of the whole arena (twice for the
// optimizer's moments) would be the peak of a moe-deep run: +118 MB at each
// checkpoint.
void add_tensors(std::vector<TensorOut>& out, const ParamLayout& layout, const float* arena,
                 const std::string& prefix) {
    for (const auto& s : layout.specs) {
        TensorOut t{prefix + s.name, "F32", s.hf_shape(), s.transposed ? nullptr : arena + s.offset, {}};
        if (s.transposed) t.fill = [&s, arena](float* dst) { to_hf(s, arena, dst); };
        out.push_back(std::move(t));
    }
}

// Reads the tensors of `layout` (names with `prefix`) from `f` into an arena,
// checking that nothing is missing, unexpected or mis-shaped.
std::vector<float> read_arena(const SafetensorsFile& f, const ParamLayout& layout,
                              const std::vector<std::string>& prefixes, size_t which) {
    const std::string& prefix = prefixes[which];
    const std::string file = fs::path(f.path).filename().string();
    for (const auto& s : layout.specs)
        if (!f.tensors.count(prefix + s.name))
            checkpoint_fail(file + ": missing tensor " + prefix + s.name + " (expected shape " +
                            shape_text(s.hf_shape()) + ")");
    for (const auto& [name, t] : f.tensors) {
        bool known = false;
        for (const auto& p : prefixes)
            if (name.rfind(p, 0) == 0 && layout.find(name.substr(p.size()))) known = true;
        if (!known)
            checkpoint_fail(file + ": unexpected tensor " + name + " (shape " + shape_text(t.shape) +
                            ") is not part of the model described by config.json");
    }
    std::vector<float> arena(static_cast<size_t>(layout.total));
    for (const auto& s : layout.specs) {
        const std::string name = prefix + s.name;
        const auto& t = f.tensors.at(name);
        if (t.shape != s.hf_shape())
            checkpoint_fail(file + ": tensor " + name + " has wrong shape " + shape_text(t.shape) + ", expected " +
                            shape_text(s.hf_shape()));
        const std::vector<float> v = f.to_f32(name);
        from_hf(s, v.data(), arena.data());
    }
    return arena;
}

}  // namespace

// ---- safetensors ------------------------------------------------------------
int64_t SafetensorsFile::Tensor::numel() const {
    int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
}

void write_safetensors(const std::string& path, const std::vector<TensorOut>& tensors,
                       const std::map<std::string, std::string>& metadata) {
    json header = json::object();
    uint64_t offset = 0;
    for (const auto& t : tensors) {
        const size_t es = any_dtype_size(t.dtype);
        if (es == 0) checkpoint_fail("write_safetensors: tensor " + t.name + ": unknown dtype " + t.dtype);
        if (t.name == "__metadata__" || header.contains(t.name))
            checkpoint_fail("write_safetensors: duplicate or reserved tensor name " + t.name);
        int64_t n = 1;
        for (auto d : t.shape) {
            if (d < 0)
                checkpoint_fail("write_safetensors: tensor " + t.name + ": negative dimension in " +
                                shape_text(t.shape));
            n *= d;
        }
        const uint64_t nbytes = static_cast<uint64_t>(n) * es;
        if (nbytes > 0 && !t.data && !t.fill) checkpoint_fail("write_safetensors: tensor " + t.name + " has no data");
        if (t.fill && t.dtype != "F32") checkpoint_fail("write_safetensors: tensor " + t.name + ": fill needs F32");
        header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + nbytes}}};
        offset += nbytes;
    }
    if (!metadata.empty()) header["__metadata__"] = metadata;
    std::string h = header.dump();
    while ((8 + h.size()) % 8 != 0) h.push_back(' ');
    const uint64_t hlen = h.size();
    write_atomic(path, [&](const ByteWriter& write) {
        write(&hlen, sizeof hlen);
        write(h.data(), h.size());
        std::vector<float> scratch;  // one filled tensor at a time
        for (const auto& t : tensors) {
            int64_t n = 1;
            for (auto d : t.shape) n *= d;
            const size_t nbytes = static_cast<size_t>(n) * any_dtype_size(t.dtype);
            if (!nbytes) continue;
            if (!t.fill) {
                write(t.data, nbytes);
                continue;
            }
            scratch.resize(static_cast<size_t>(n));
            t.fill(scratch.data());
            write(scratch.data(), nbytes);
        }
    });
}

SafetensorsFile read_safetensors(const std::string& path) {
    SafetensorsFile f;
    f.path = path;
    const std::string file = fs::path(path).filename().string();
    if (!fs::exists(path)) checkpoint_fail(file + ": file not found: " + path);
    f.bytes = read_file(path);
    const uint64_t size = f.bytes.size();
    if (size < 8)
        checkpoint_fail(file + ": truncated file: " + std::to_string(size) +
                        " bytes, shorter than the 8-byte header length");
    uint64_t hlen = 0;
    std::memcpy(&hlen, f.bytes.data(), 8);
    if (hlen > size - 8)
        checkpoint_fail(file + ": truncated file: header length " + std::to_string(hlen) + " exceeds the " +
                        std::to_string(size - 8) + " bytes after it");
    f.data_start = 8 + hlen;
    const uint64_t data_size = size - f.data_start;

    json header;
    try {
        header = json::parse(f.bytes.begin() + 8, f.bytes.begin() + static_cast<std::ptrdiff_t>(8 + hlen));
    } catch (const json::exception& e) {
        checkpoint_fail(file + ": corrupt header (not valid JSON): " + e.what());
    }
    if (!header.is_object())
        checkpoint_fail(file + ": corrupt header: expected a JSON object, got " + header.type_name());

    for (auto it = header.begin(); it != header.end(); ++it) {
        const std::string& name = it.key();
        const json& v = it.value();
        if (name == "__metadata__") {
            if (!v.is_object()) checkpoint_fail(file + ": corrupt header: __metadata__ is not an object");
            for (auto m = v.begin(); m != v.end(); ++m) {
                if (!m.value().is_string())
                    checkpoint_fail(file + ": corrupt header: __metadata__." + m.key() + " is not a string");
                f.metadata[m.key()] = m.value().get<std::string>();
            }
            continue;
        }
        auto bad = [&](const std::string& what) {
            checkpoint_fail(file + ": corrupt header: tensor " + name + ": " + what);
        };
        if (!v.is_object()) bad("entry is not an object");
        SafetensorsFile::Tensor t;
        if (!v.contains("dtype") || !v["dtype"].is_string()) bad("field dtype missing or not a string");
        t.dtype = v["dtype"].get<std::string>();
        if (!v.contains("shape") || !v["shape"].is_array()) bad("field shape missing or not an array");
        for (const auto& d : v["shape"]) {
            if (!d.is_number_integer() || d.get<int64_t>() < 0) bad("field shape has a non-integer or negative entry");
            t.shape.push_back(d.get<int64_t>());
        }
        const json* off = v.contains("data_offsets") ? &v["data_offsets"] : nullptr;
        if (!off || !off->is_array() || off->size() != 2 || !(*off)[0].is_number_unsigned() ||
            !(*off)[1].is_number_unsigned())
            bad("field data_offsets missing or not [begin, end]");
        t.begin = (*off)[0].get<uint64_t>();
        t.end = (*off)[1].get<uint64_t>();
        if (t.begin > t.end) bad("field data_offsets has begin > end");
        if (t.end > data_size)
            checkpoint_fail(file + ": truncated file: tensor " + name + " data ends at byte " + std::to_string(t.end) +
                            " of the data section, which has only " + std::to_string(data_size) + " bytes");
        const size_t es = any_dtype_size(t.dtype);
        if (es != 0 && static_cast<uint64_t>(t.numel()) * es != t.end - t.begin)
            bad("field data_offsets span " + std::to_string(t.end - t.begin) + " bytes but shape " +
                shape_text(t.shape) + " of " + t.dtype + " needs " +
                std::to_string(static_cast<uint64_t>(t.numel()) * es));
        f.tensors.emplace(name, std::move(t));
    }
    return f;
}

std::vector<float> SafetensorsFile::to_f32(const std::string& name) const {
    const std::string file = fs::path(path).filename().string();
    auto it = tensors.find(name);
    if (it == tensors.end()) checkpoint_fail(file + ": missing tensor " + name);
    const Tensor& t = it->second;
    const size_t es = dtype_size(t.dtype);
    if (es == 0)
        checkpoint_fail(file + ": tensor " + name + " has unsupported dtype " + t.dtype +
                        " (supported: F32, F16, BF16, F64)");
    const size_t n = static_cast<size_t>(t.numel());
    if (n * es != t.end - t.begin)
        checkpoint_fail(file + ": tensor " + name + ": data size does not match shape " + shape_text(t.shape));
    std::vector<float> out(n);
    const unsigned char* p = data() + t.begin;
    if (t.dtype == "F32") {
        std::memcpy(out.data(), p, n * 4);
    } else if (t.dtype == "F16") {
        for (size_t i = 0; i < n; ++i) {
            uint16_t h;
            std::memcpy(&h, p + 2 * i, 2);
            out[i] = f16_bits_to_f32(h);
        }
    } else if (t.dtype == "BF16") {
        for (size_t i = 0; i < n; ++i) {
            uint16_t h;
            std::memcpy(&h, p + 2 * i, 2);
            out[i] = bf16_bits_to_f32(h);
        }
    } else {  // F64
        for (size_t i = 0; i < n; ++i) {
            double d;
            std::memcpy(&d, p + 8 * i, 8);
            out[i] = static_cast<float>(d);
        }
    }
    return out;
}

// ---- checkpoints --------------------------------------------------------------
void save_checkpoint(const std::string& dir, const ModelConfig& cfg, const ParamLayout& layout, const float* params,
                     const json& metadata, std::optional<OptimizerStateView> opt) {
    if (!params) checkpoint_fail("save_checkpoint: params is null");
    if (opt &&
        (opt->m.size() != static_cast<size_t>(layout.total) || opt->v.size() != static_cast<size_t>(layout.total)))
        checkpoint_fail("save_checkpoint: optimizer state has " + std::to_string(opt->m.size()) + " / " +
                        std::to_string(opt->v.size()) + " floats, the layout " + std::to_string(layout.total));
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) checkpoint_fail("save_checkpoint: cannot create directory " + dir + ": " + ec.message());
    const fs::path d(dir);
    const std::string id = new_save_id();

    // 1. optimizer (or remove a stale one), 2. config.json, 3. model last.
    const fs::path opt_path = d / "optimizer.safetensors";
    if (opt) {
        std::vector<TensorOut> t;
        add_tensors(t, layout, opt->m.data(), "exp_avg.");
        add_tensors(t, layout, opt->v.data(), "exp_avg_sq.");
        write_safetensors(
            opt_path.string(), t,
            {{"format", "pt"}, {"step", std::to_string(opt->step)}, {"mlk.save_id", id}, {"mlk.optimizer", "adamw"}});
    } else {
        fs::remove(opt_path, ec);
    }

    const std::string cj = hf_config_json(cfg).dump(2) + "\n";
    write_atomic((d / "config.json").string(), {{cj.data(), cj.size()}});

    std::map<std::string, std::string> meta = {{"format", "pt"}, {"mlk.save_id", id}};
    const json user = metadata.is_null() ? json::object() : metadata;
    meta["mlk.metadata"] = user.dump();
    if (user.is_object())
        for (auto it = user.begin(); it != user.end(); ++it) {
            if (it.key() == "format" || it.key().rfind("mlk.", 0) == 0) continue;  // only in mlk.metadata
            meta[it.key()] = it.value().is_string() ? it.value().get<std::string>() : it.value().dump();
        }
    std::vector<TensorOut> t;
    add_tensors(t, layout, params, "");
    write_safetensors((d / "model.safetensors").string(), t, meta);
}

LoadedCheckpoint load_checkpoint(const std::string& dir) {
    const fs::path d(dir);
    if (!fs::is_directory(d)) checkpoint_fail("load_checkpoint: " + dir + " is not a directory");
    LoadedCheckpoint out;

    const fs::path cfg_path = d / "config.json";
    if (!fs::exists(cfg_path)) checkpoint_fail("config.json: file not found in " + dir);
    json cj;
    {
        const auto bytes = read_file(cfg_path.string());
        try {
            cj = json::parse(bytes.begin(), bytes.end());
        } catch (const json::exception& e) {
            checkpoint_fail(std::string("config.json: not valid JSON: ") + e.what());
        }
    }
    out.model = model_config_from_hf(cj);
    out.layout = make_param_layout(out.model);

    const SafetensorsFile model = read_safetensors((d / "model.safetensors").string());
    out.params = read_arena(model, out.layout, {""}, 0);
    if (auto it = model.metadata.find("mlk.metadata"); it != model.metadata.end()) {
        try {
            out.metadata = json::parse(it->second);
        } catch (const json::exception& e) {
            checkpoint_fail(std::string("model.safetensors: corrupt header: __metadata__.mlk.metadata is not JSON: ") +
                            e.what());
        }
    } else {  // a file from elsewhere: its string metadata as is
        out.metadata = json::object();
        for (const auto& [k, v] : model.metadata) out.metadata[k] = v;
    }

    const fs::path opt_path = d / "optimizer.safetensors";
    if (fs::exists(opt_path)) {
        const SafetensorsFile of = read_safetensors(opt_path.string());
        auto mid = model.metadata.find("mlk.save_id");
        auto oid = of.metadata.find("mlk.save_id");
        if (mid != model.metadata.end() && oid != of.metadata.end() && mid->second != oid->second)
            checkpoint_fail("optimizer.safetensors: belongs to a different save than model.safetensors (save id " +
                            oid->second + " vs " + mid->second + ")");
        OptimizerState st;
        const std::vector<std::string> prefixes = {"exp_avg.", "exp_avg_sq."};
        st.m = read_arena(of, out.layout, prefixes, 0);
        st.v = read_arena(of, out.layout, prefixes, 1);
        auto step = of.metadata.find("step");
        if (step == of.metadata.end()) checkpoint_fail("optimizer.safetensors: __metadata__ has no step");
        try {
            size_t pos = 0;
            st.step = std::stoll(step->second, &pos);
            if (pos != step->second.size()) throw std::invalid_argument("trailing characters");
        } catch (const std::exception&) {
            checkpoint_fail("optimizer.safetensors: __metadata__.step \"" + step->second + "\" is not an integer");
        }
        out.optimizer = std::move(st);
    }
    return out;
}

}  // namespace mlk
