// The run browser's groups: runs by sweep (then by the sweep's
// configuration) or by configuration (runs that differ in the seed only,
// seedGroupOf: the charts' "Group seeds" notion). Data only, no widget: the
// browser draws the groups as a tree.
#pragma once

#include <QString>

#include <cstdint>
#include <string>
#include <vector>

#include "core/store/store.h"

namespace mlk {

struct GroupedRun {
    int64_t id = 0;
    std::string name, status, configJson;
    int64_t seed = 0;
};

struct RunGroup {
    QString key;      // stable across refreshes (keeps a group open or closed)
    QString label;    // "Sweep 3: 2 configurations × 5 seeds, 7/10 finished"
    QString created;  // ISO time of a sweep; empty otherwise
    std::vector<RunGroup> children;
    std::vector<int64_t> runs;  // runs directly under this group
    int finished = 0;           // of the runs under it, children's included
    int total = 0;              // a sweep: configurations x seeds (its planned runs); else its runs
};

// Sweeps newest first, each with its configurations in the sweep's order and
// their runs by seed; runs in no sweep last, under "Not in a sweep". A sweep
// none of whose runs exists is left out.
std::vector<RunGroup> groupBySweep(const std::vector<GroupedRun>& runs, const std::vector<SweepInfo>& sweeps,
                                   const std::vector<SweepRun>& links);

// One group per configuration (seed aside), newest run's group first, runs
// by seed; named after the sweep configuration of one of its runs, else its
// oldest run. A run whose configuration cannot be read is a group alone.
std::vector<RunGroup> groupByConfiguration(const std::vector<GroupedRun>& runs, const std::vector<SweepRun>& links);

}  // namespace mlk
