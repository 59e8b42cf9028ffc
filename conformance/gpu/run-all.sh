#!/bin/bash
# Everything issue 4 asks to run on the GPU, as one command on the GPU machine.
#
# Here (once per change of dependencies or sources):
#   conformance/gpu/run-all.sh --prepare
#     npm run build (and build/cycle-calls.node, the fast-call addon); ../shared/device/pack.sh (node +
#     production deps into .device/, node recompressed at xz -9: the carry must stay under 64 MiB with
#     the tracked files); dist/ trimmed of what the device runs none of (source maps, declarations,
#     the compiled tests: vitest runs test/ from source); dist/commit.txt names the commit built, which the
#     GPU benchmarks record where no --commit is given;
#     the test dependencies vitest needs (vitest, vite, @vitest/*, rolldown, lightningcss,
#     fast-check, ...; not @biomejs or typescript) as .testdeps/node_modules.tar.xz (ignored by git).
#
# Then the device tool's run, with carry [".device", "dist", "build", ".testdeps"] (about 38 MiB, and the
# tracked files about 20 MiB):
#   source .device/setup.sh && bash conformance/gpu/run-all.sh
#     0. the raw driver records the cases named in conformance/cuda/to-record.txt (new ones, and
#        ones whose recording changed) into $OUT/h200-driver.json, merged with the committed
#        transcript (record.js --only ... --merge); copy it to conformance/results/ after the run;
#     1. node dist/conformance/gpu/prove.js: the backend contract, every CUDA case, the HIP/ACL
#        sequences (and two GPUs where there are two) -> $OUT/prove.json, $OUT/h200-vmmkit-cases.json;
#     1b. node dist/conformance/gpu/share.js: sharing between child processes -> $OUT/h200-sharing.json;
#     2. the HIP and ACL conformance tables (vitest) against the real driver
#        (VMMKIT_TEST_BACKEND=cuda) -> $OUT/flavors-on-gpu.txt.
#   `--flavours-only` runs step 2 alone.
#
# Without a GPU, VMMKIT_TEST_BACKEND=fake-cuda rehearses step 2 over conformance/gpu/fake-driver.ts,
# and `node dist/conformance/gpu/prove.js --fake` step 1.
set -uo pipefail
root=$(git rev-parse --show-toplevel 2>/dev/null || pwd)
cd "$root"

if [ "${1:-}" = --prepare ]; then
  set -e
  npm run build
  node scripts/build-native.mjs --require
  "$root/../shared/device/pack.sh"
  if [ "$(cat .device/node.level 2>/dev/null)" != "9 $(node --version)" ]; then
    xz -T2 -9 -c "$(command -v node)" > .device/node.xz && echo "9 $(node --version)" > .device/node.level
  fi
  rm -rf dist/test && find dist \( -name '*.map' -o -name '*.d.ts' \) -delete
  # The commit this build is of, for the results (the GPU machine's .git may be stale): dirty if the tree differs.
  echo "$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- src bench conformance scripts || echo -dirty)" > dist/commit.txt
  grep -qx '/.testdeps/' .git/info/exclude || echo '/.testdeps/' >> .git/info/exclude
  mkdir -p .testdeps
  (cd node_modules && tar -cf - $(ls -A | grep -v -E '^(@biomejs|typescript|koffi|@koromix|@types|undici-types|\.package-lock\.json|\.bin|\.vite|\.vite-temp)$')) |
    xz -T4 -6 > .testdeps/node_modules.tar.xz
  du -ch .device dist .testdeps | tail -1
  exit 0
fi

out=${OUT:-gpu-out}
mkdir -p "$out"
# node_modules is .device/app/node_modules (setup.sh links it); the test dependencies join it.
tar -xJf .testdeps/node_modules.tar.xz -C node_modules/ || exit 1
status=0
if [ "${1:-}" != --flavours-only ]; then
  transcript=()
  pending=$(grep -v -e '^#' -e '^$' conformance/cuda/to-record.txt 2>/dev/null | paste -sd, -)
  if [ -n "$pending" ]; then
    node dist/conformance/cuda/record.js "$out/h200-driver.json" --only "$pending" \
      --merge conformance/results/h200-driver.json 2>&1 | tee "$out/record.txt" || status=1
    [ -s "$out/h200-driver.json" ] && transcript=(--transcript "$out/h200-driver.json")
  fi
  node dist/conformance/gpu/prove.js --out "$out" ${transcript[@]+"${transcript[@]}"} 2>&1 | tee "$out/prove.txt" || status=1
  # Memory shared between child processes, every front end (issue 11) -> $OUT/h200-sharing.json.
  node dist/conformance/gpu/share.js --out "$out" > "$out/share.txt" 2>&1 || status=1
fi
# The transcript names the checkout's folder as "." (it says where the tests ran, not whose machine it was).
VMMKIT_TEST_BACKEND=cuda node node_modules/vitest/vitest.mjs run \
  test/flavors/hip/conformance.test.ts test/flavors/acl/conformance.test.ts --reporter=verbose 2>&1 |
  sed "s#$root#.#g" | tee "$out/flavors-on-gpu.txt" || status=1
exit $status
