"""What the two recorders share (traces/record.py and traces/h200-whatif/record.py): the networks
their workloads build, and the plumbing of a recording (the child's settings, its snapshot as plain
values, its result line, the machine's versions).

Every function that builds or runs a network takes torch as an argument, so that this module imports
without PyTorch (the parents never touch CUDA, and trace_stats.py needs no torch). The networks
create their parameters, and move them to the device, in the order the recorders always have:
the committed traces depend on every request and its order (Note [Same requests] below).
"""

import ctypes
import json
import math
import os
import subprocess

# Far more than any workload here makes, so the history ring never drops an event.
MAX_ENTRIES = 50_000_000

# Note [Same requests]: a recording is compared with others of the same workload request by request
# (the two settings of traces/h200, every run of traces/h200-whatif against its reference), and the
# committed traces were recorded with these bodies when each recorder had its own copy; they moved
# here with every allocation and free in the same order (checked on the CPU: torch.profiler's memory
# events of each workload, before and after). Moving a tensor's last use, or returning one that a
# caller then holds longer, moves its free and so what the allocator can reuse. So the training
# step stays in each workload: traces/record.py's keeps a step's tensors alive into the next step,
# the what-if recorder's deletes them, and one function could not do both without a contortion.


# ----------------------------------------------------------------- networks


def attention(torch, q, k, v, causal):
    """scaled_dot_product_attention, or its formula where PyTorch 1.x lacks it (the CPU smoke test)."""
    F = torch.nn.functional
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    s = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    if causal:
        t = s.shape[-1]
        s = s.masked_fill(torch.ones(t, t, dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    return s.softmax(-1) @ v


def decoder_layer(torch, d, heads):
    """The class of one pre-norm decoder layer: layer(x, cache) -> (x, (k, v)); with a cache (the
    earlier tokens' k and v) the new tokens attend to all of them, without one causally."""
    nn, F = torch.nn, torch.nn.functional

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.up, self.down = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

        def forward(self, x, cache=None):
            b, t, _ = x.shape
            q, k, v = self.qkv(self.ln1(x)).view(b, t, 3, heads, d // heads).permute(2, 0, 3, 1, 4)
            if cache is not None:  # the growth kv_decoder studies: a new, longer tensor every step
                k = torch.cat([cache[0], k], dim=2)
                v = torch.cat([cache[1], v], dim=2)
            a = attention(torch, q, k, v, cache is None)
            x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
            return x + self.down(F.gelu(self.up(self.ln2(x)))), (k, v)

    return Layer


def gpt(torch, vocab, d, heads, layers):
    """A GPT-style decoder (1024 positions, an untied head), on the CPU."""
    nn = torch.nn
    Layer = decoder_layer(torch, d, heads)

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.tok, self.pos = nn.Embedding(vocab, d), nn.Embedding(1024, d)
            self.blocks = nn.ModuleList(Layer() for _ in range(layers))
            self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab, bias=False)

        def forward(self, idx):
            x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
            for blk in self.blocks:
                x = blk(x)[0]
            return self.head(self.ln(x))

    return GPT()


def kv_decoder(torch, dev, dtype, vocab, d, heads, layers):
    """A decoder for inference whose per-layer KV caches grow by torch.cat: a new, longer tensor every
    step. Returns step(tokens, caches) -> (next token per row, new caches); caches None for a prompt."""
    nn = torch.nn
    Layer = decoder_layer(torch, d, heads)
    emb = nn.Embedding(vocab, d).to(dev, dtype)
    stack = nn.ModuleList(Layer() for _ in range(layers)).to(dev, dtype)
    head = nn.Linear(d, vocab, bias=False).to(dev, dtype)

    def step(tokens, caches):
        x = emb(tokens)
        new = []
        for i, layer in enumerate(stack):
            x, c = layer(x, caches[i] if caches else None)
            new.append(c)
        return head(x[:, -1]).argmax(-1, keepdim=True), new

    return step


def decode_round_robin(torch, dev, step, pending, vocab, beams, admit=None):
    """Serves pending [(prompt length, new tokens)] with up to four requests in flight, one token per
    request per tick, `beams` rows each; admit(i), where given, is called before the i-th admission."""
    active = []  # [caches, next token, tokens left]
    admitted = 0
    with torch.no_grad():
        while pending or active:
            while pending and len(active) < 4:
                if admit:
                    admit(admitted)
                admitted += 1
                prompt, out = pending.pop(0)
                tok, caches = step(torch.randint(0, vocab, (beams, prompt), device=dev), None)
                active.append([caches, tok, out])
            for req in active:
                req[1], req[0] = step(req[1], req[0])
                req[2] -= 1
            active = [r for r in active if r[2] > 0]


def seed(torch, value):
    """The same weights, data and cuDNN algorithms (and workspaces) every run."""
    torch.manual_seed(value)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True


# ----------------------------------------------------------------- runs


def chosen_workloads(parser, only, workloads):
    """--only's comma-separated names (every workload without it); an unknown name is a usage error."""
    names = only.split(",") if only else list(workloads)
    unknown = [n for n in names if n not in workloads]
    if unknown:
        parser.error(f"unknown workload(s): {', '.join(unknown)}; known: {', '.join(workloads)}")
    return names


def allocator_env(conf):
    """This process's environment with PYTORCH_CUDA_ALLOC_CONF set to conf (unset for None), and no
    PYTORCH_ALLOC_CONF, so that the child runs under exactly that setting."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF")}
    if conf:
        env["PYTORCH_CUDA_ALLOC_CONF"] = conf
    return env


def child_result(stdout):
    """The result a child printed: the last line of its output that is a JSON object; None if none."""
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    return json.loads(lines[-1]) if lines else None


def plain(value):
    """The snapshot as plain Python values (dict, list, str, int, float, bool, None), 'frames' dropped."""
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items() if k != "frames"}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def cuda_driver_version():
    """cuDriverGetVersion (13000 for CUDA 13.0), asked of libcuda itself; None where it cannot be loaded."""
    try:
        version = ctypes.c_int(0)
        if ctypes.CDLL("libcuda.so.1").cuDriverGetVersion(ctypes.byref(version)) != 0:
            return None
        return version.value
    except OSError:
        return None


def nvidia_smi():
    try:
        line = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=30, check=True,
        ).stdout.splitlines()[0]
        name, driver = (s.strip() for s in line.split(","))
        return name, driver
    except (OSError, subprocess.SubprocessError, IndexError, ValueError):
        return None, None
