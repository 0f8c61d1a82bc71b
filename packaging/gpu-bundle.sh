#!/usr/bin/env bash
# The GPU checks, prepared where the CUDA toolkit is (no GPU needed) for a
# machine that has a GPU but not this project's build dependencies (the lent
# device machines have nvcc, CMake and CUDA's libraries, not the headers of
# SQLite, GoogleTest or nlohmann_json, and fetch nothing):
#
#   packaging/gpu-bundle.sh   builds the GUI-free tree with CUDA (build-gpu/)
#                             and packs into gpu-bundle/ the GPU test suites,
#                             the CLI and the shared libraries they need
#                             besides CUDA's and glibc's (xz: the device tool
#                             carries 64 MiB with the repository)
#   gpu-bundle/run.sh         on the GPU machine, from the repository root:
#                             the device's name, every GPU test suite, then
#                             `bench --device both` on the model presets;
#                             logs to $OUT (or gpu-bundle/out); exit status 0
#                             only when every suite passed and the bench ran
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
build=${MLK_GPU_BUILD_DIR:-$here/build-gpu}
bundle=$here/gpu-bundle
suites="cuda_bodies_test cuda_ops_test cuda_engines_test"

cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMLK_BUILD_GUI=OFF \
  -DCMAKE_CUDA_ARCHITECTURES="80-real;90"
# shellcheck disable=SC2086
cmake --build "$build" --parallel "$(nproc)" --target $suites mismatch-lab-cli
for s in cuda_ops_test cuda_engines_test; do
  [ -x "$build/tests/$s" ] || { echo "gpu-bundle: $s was not built: CMake found no CUDA 12+ toolkit" >&2; exit 1; }
done

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
for s in $suites; do cp "$build/tests/$s" "$stage/bin/"; done
cp "$build/app/mismatch-lab-cli" "$stage/bin/"
strip "$stage"/bin/*
# Every shared library the binaries load but CUDA's (the GPU machine's own
# match its driver) and glibc's (the loader's own).
for bin in "$stage"/bin/*; do ldd "$bin" | awk '$3 ~ /^\// {print $3}'; done | sort -u |
  grep -Ev '/(libc|libm|libdl|libpthread|librt|libresolv|ld-linux-x86-64)\.so' |
  grep -Ev '/libcu(da|dart|blas|blasLt)\.so' |
  while read -r lib; do cp -L "$lib" "$stage/lib/"; done

rm -rf "$bundle"
mkdir -p "$bundle"
tar -C "$stage" -cJf "$bundle/bundle.tar.xz" bin lib
cat >"$bundle/run.sh" <<'EOF'
#!/usr/bin/env bash
# Made by packaging/gpu-bundle.sh; run on the GPU machine.
set -uo pipefail
b=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$b/out}
mkdir -p "$out" /tmp/mlk-gpu
tar -C /tmp/mlk-gpu -xJf "$b/bundle.tar.xz"
# CUDA's libraries: the toolkit's, else the pip wheels' (nvidia-cublas, ...).
cuda_libs=""
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib; do [ -d "$d" ] && cuda_libs="$cuda_libs:$d"; done
for f in $(find /usr /opt -name 'libcublas.so.13' 2>/dev/null | head -3); do cuda_libs="$cuda_libs:$(dirname "$f")"; done
for f in $(find /usr /opt -name 'libcudart.so.13' 2>/dev/null | head -3); do cuda_libs="$cuda_libs:$(dirname "$f")"; done
export LD_LIBRARY_PATH="/tmp/mlk-gpu/lib${cuda_libs}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
{ nvidia-smi -L; date -u; } 2>&1 | tee "$out/device.txt"
rc=0
for s in cuda_bodies_test cuda_ops_test cuda_engines_test; do
  ldd "/tmp/mlk-gpu/bin/$s" | grep 'not found' && rc=1
  timeout 300 "/tmp/mlk-gpu/bin/$s" 2>&1 | tee "$out/$s.log" | grep -E '^\[  (PASSED|FAILED|SKIPPED) |^\[==========\]' || rc=1
  grep -q '^\[  PASSED  \]' "$out/$s.log" && ! grep -q '^\[  FAILED  \]' "$out/$s.log" || rc=1
done
# The RL step per model preset, on the CPU and then with both engines on the GPU.
timeout 420 /tmp/mlk-gpu/bin/mismatch-lab-cli bench --device both --steps 3 2>&1 | tee "$out/bench.txt" || rc=1
echo "gpu-bundle run.sh: exit $rc"
exit $rc
EOF
chmod +x "$bundle/run.sh"
du -sh "$bundle"
echo "gpu-bundle: carry gpu-bundle (device run: carry [\"gpu-bundle\"], command gpu-bundle/run.sh)"
