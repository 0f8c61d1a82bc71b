#!/usr/bin/env bash
# The GPU checks, prepared where the CUDA toolkit is (no GPU needed) for a
# machine that has a GPU but not this project's build dependencies (nvcc,
# CMake and CUDA's libraries, but not the headers of SQLite, GoogleTest or
# nlohmann_json, and no network to fetch them):
#
#   packaging/gpu-bundle.sh   builds the GUI-free tree with CUDA (build-gpu/)
#                             and packs into gpu-bundle/ the GPU test suites,
#                             the CLI and the shared libraries they need
#                             besides CUDA's and glibc's (xz: the bundle
#                             travels with the repository, 64 MiB at most)
#   gpu-bundle/run.sh         on the GPU machine, from the repository root:
#                             the device's name, every GPU test suite, the
#                             fast GEMM plans' crossover table, a paired
#                             GPU bench of every model preset (24 or 12
#                             interleaved steps, both families; then two
#                             identical lanes of the dense ones), a profile
#                             of dense-small's step in each family, then
#                             `bench --device both --kernels both` on the
#                             model presets, then memcheck if time is left
#                             (MLK_GPU_BUDGET_S, default 400 s); logs to $OUT
#                             (or gpu-bundle/out); exit status 0 only when
#                             every suite passed and the bench ran
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${MLK_GPU_BUILD_DIR:-$here/build-gpu}
bundle=$here/gpu-bundle
suites="cuda_bodies_test cuda_ops_test cuda_engines_test"

cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMLK_BUILD_GUI=OFF \
  -DCMAKE_CUDA_ARCHITECTURES="80-real;90"
# shellcheck disable=SC2086
cmake --build "$build" --parallel "$(nproc)" --target $suites mismatch-lab-cli mismatch-lab-bench-cuda-gemm
for s in cuda_ops_test cuda_engines_test; do
  [ -x "$build/tests/$s" ] || { echo "gpu-bundle: $s was not built: CMake found no CUDA 12+ toolkit" >&2; exit 1; }
done

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
for s in $suites; do cp "$build/tests/$s" "$stage/bin/"; done
cp "$build/app/mismatch-lab-cli" "$build/bench/mismatch-lab-bench-cuda-gemm" "$stage/bin/"
strip "$stage"/bin/*
# Every shared library the binaries load but CUDA's (the GPU machine's own
# match its driver) and glibc's (the loader's own).
# OpenBLAS too, which `bench --blas` opens at run time (no binary links it).
openblas="$(pkg-config --variable=libdir openblas)/libopenblas.so.0"
for bin in "$stage"/bin/* "$openblas"; do ldd "$bin" | awk '$3 ~ /^\// {print $3}'; done | sort -u |
  grep -Ev '/(libc|libm|libdl|libpthread|librt|libresolv|ld-linux-x86-64)\.so' |
  grep -Ev '/libcu(da|dart|blas|blasLt)\.so' |
  while read -r lib; do cp -L "$lib" "$stage/lib/"; done
cp -L "$openblas" "$stage/lib/"

rm -rf "$bundle"
mkdir -p "$bundle"
tar -C "$stage" -cJf "$bundle/bundle.tar.xz" bin lib
cat >"$bundle/run.sh" <<'EOF'
#!/usr/bin/env bash
# Made by packaging/gpu-bundle.sh; run on the GPU machine. GPU time is
# short, so the two device suites run side by side (the engines suite
# in two shards: their CPU references take the cores, the GPU is shared), then
# the bench runs alone, so that its figures see an idle machine, then, if the
# time allows, compute-sanitizer's memcheck over the op suite. The host-run
# device bodies (cuda_bodies_test) need no GPU: CI runs them.
set -uo pipefail
b=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$b/out}
bin=/tmp/mlk-gpu/bin
budget=${MLK_GPU_BUDGET_S:-400}  # this script's whole run, in seconds
mkdir -p "$out" /tmp/mlk-gpu
tar -C /tmp/mlk-gpu -xJf "$b/bundle.tar.xz"
# CUDA's libraries: the toolkit's, else the pip wheels' (nvidia-cublas, ...).
cuda_libs=""
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib; do [ -d "$d" ] && cuda_libs="$cuda_libs:$d"; done
for f in $(find /usr /opt -name 'libcublas.so.13' 2>/dev/null | head -3); do cuda_libs="$cuda_libs:$(dirname "$f")"; done
for f in $(find /usr /opt -name 'libcudart.so.13' 2>/dev/null | head -3); do cuda_libs="$cuda_libs:$(dirname "$f")"; done
export LD_LIBRARY_PATH="/tmp/mlk-gpu/lib${cuda_libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
{
  nvidia-smi -L
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
  echo "cpus: $(nproc); $(grep -m1 'model name' /proc/cpuinfo)"
  date -u
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  for s in "$bin"/*; do ldd "$s" | grep -E 'not found|libcu' | sed "s|^|$(basename "$s"): |"; done
} 2>&1 | tee "$out/device.txt"
rc=0
suite() {  # suite LOG BINARY [VAR=VALUE...]: one suite's run, its whole log under $out
  local log=$1 name=$2
  shift 2
  timeout 200 env "$@" "$bin/$name" >"$out/$log" 2>&1
}
suite cuda_ops_test.log cuda_ops_test &
suite cuda_engines_test.0.log cuda_engines_test GTEST_TOTAL_SHARDS=2 GTEST_SHARD_INDEX=0 &
suite cuda_engines_test.1.log cuda_engines_test GTEST_TOTAL_SHARDS=2 GTEST_SHARD_INDEX=1 &
wait
for log in cuda_ops_test.log cuda_engines_test.0.log cuda_engines_test.1.log; do
  echo "== $log"
  grep -E '^\[ +(FAILED|SKIPPED|PASSED) +\]|^\[==========\]' "$out/$log" | grep -v '^\[  FAILED  \] .*listed below' || true
  # A suite passes when it finished, nothing failed, and nothing skipped
  # itself: a skip here means the suite saw no device.
  grep -q '^\[  PASSED  \]' "$out/$log" && ! grep -q '^\[  \(FAILED\|SKIPPED\) \]' "$out/$log" || { rc=1; echo "$log: NOT PASSED"; }
done
echo "suites done at ${SECONDS} s"
# Where the fast family's GEMM plans cross over on this device (a table).
timeout 60 "$bin/mismatch-lab-bench-cuda-gemm" --quick >"$out/gemm.txt" 2>&1 || rc=1
echo "GEMM plan bench done at ${SECONDS} s"
# Is the fast family at least as fast as the
# batch-invariant one in every phase? Interleaved pairs of steps give each
# phase's paired median and its bootstrap interval: 24 pairs on the dense
# presets, 12 on the larger ones; two identical lanes (`--kernels same`) the
# noise floor of that median on this machine.
line_buffered=""
command -v stdbuf >/dev/null && line_buffered="stdbuf -oL"
for lanes in both same; do
  timeout 120 $line_buffered "$bin/mismatch-lab-cli" bench --preset dense-small --preset dense-tiny --device cuda \
    --kernels "$lanes" --steps 24 2>&1 | tee "$out/bench-paired-$lanes.txt" || rc=1
done
timeout 150 $line_buffered "$bin/mismatch-lab-cli" bench --preset moe-tiny --preset moe-small --preset dense-deep \
  --preset moe-deep --device cuda --kernels both --steps 12 2>&1 | tee -a "$out/bench-paired-both.txt" || rc=1
echo "paired GPU bench done at ${SECONDS} s"
# Where dense-small's step spends its time in each family: device time by
# kernel, and the host's time between device calls (MLK_CUDA_PROFILE waits
# for each call, so these steps are slower than the bench's).
for family in fast batch-invariant; do
  MLK_CUDA_PROFILE=1 timeout 60 "$bin/mismatch-lab-cli" bench --preset dense-small --device cuda \
    --kernels "$family" --steps 4 >"$out/profile-$family.txt" 2>&1 || rc=1
done
echo "profiles done at ${SECONDS} s"
# The RL step per model preset, each kernel family, on the CPU and then with
# both engines on the GPU.
left=$((budget - SECONDS - 60))
[ "$left" -gt 30 ] || left=30
timeout "$left" $line_buffered "$bin/mismatch-lab-cli" bench --device both --kernels both --steps 3 2>&1 |
  tee "$out/bench.txt" || rc=1
echo "bench done at ${SECONDS} s"
left=$((budget - SECONDS - 5))
if [ "$left" -gt 20 ] && command -v compute-sanitizer >/dev/null; then
  timeout "$left" compute-sanitizer --tool memcheck --error-exitcode 3 "$bin/cuda_ops_test" >"$out/memcheck.log" 2>&1
  echo "memcheck over cuda_ops_test: exit $? ($(grep -c 'Invalid\|ERROR SUMMARY' "$out/memcheck.log") error lines; 124: out of time)"
  grep 'ERROR SUMMARY' "$out/memcheck.log" || true
fi
echo "gpu-bundle run.sh: exit $rc after ${SECONDS} s"
exit $rc
EOF
chmod +x "$bundle/run.sh"
du -sh "$bundle"
echo "gpu-bundle: carry gpu-bundle (device run: carry [\"gpu-bundle\"], command gpu-bundle/run.sh)"
