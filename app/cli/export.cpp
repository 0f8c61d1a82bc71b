// `export`: one run's metrics as CSV or JSON (core/store/export.h).
#include <cstdio>

#include "app/cli/args.h"
#include "app/cli/commands.h"
#include "core/config/atomic_file.h"
#include "core/store/export.h"

namespace mlk::cli {

int cmd_export(const Argv& argv) {
    Spec spec;
    spec.values = {"--db", "--format", "--out"};
    spec.positional = "RUN id";
    spec.min_positional = spec.max_positional = 1;
    const Args a = parse_args(argv, spec);
    const int64_t id = parse_run_id("RUN", a.positional[0]);
    const std::string format = a.require("--format");
    if (format != "csv" && format != "json")
        throw UsageError("--format: '" + format + "' is not allowed; allowed values: csv, json");
    const std::string out = output_file_option(a, "--out");
    Store store = open_existing_store(a);
    if (!store.run_info(id))
        throw UsageError("RUN: run " + std::to_string(id) + " is not in " + store.path() +
                         " (see `mismatch-lab-cli runs`)");
    write_file_atomically(out, format == "csv" ? export_csv(store, {id}) : export_json(store, {id}).dump(1) + "\n");
    std::printf("wrote %s\n", out.c_str());
    return 0;
}

}  // namespace mlk::cli
