"""Writes ckpt/model.pt, in the nanogpt-torch example's directory (the
working directory), as the model argv[1] names: the honest uniform model, or
one that reads ahead of the byte it predicts where it hopes the evaluation
does not look. Each cheat got a better val_bpb than honest work from an
evaluation that checked causality on its first batch only, or (remembers)
that called one module for every batch, or (next-row) whose batches were
consecutive windows, or (file-state, overwrites-val) that checked forward
alone and loaded the model before it read the validation split, or
(fork-file-state, enter-file-state) that did not look into the function
prim::fork runs or a context manager's __enter__, or (stashes-in-its-input)
that gave the model its own batch to write, or (reads-freed-memory) that let
it read memory no op had written, or (sets-into-freed-memory) that named
what it refused rather than what it allowed, or (class-setstate-state,
hook-file-state) that checked the modules' methods but not the code of an
attribute's class or a forward hook, or (unlisted-object-state) that
looked for that code through the types of the module it loaded, or
(upper-case-source, utf7-source) that parsed the archive's sources with
Python's parser, and only those named .py, or (two-directories) that read
the archive with Python's zip reader, or (column-counts) whose checks
kept the bytes each position of a batch holds across its rows; or
(oversized-buffer) that let a tensor reach past its data. The variety model is honest,
of many kinds of operation, and must be scored."""
import os
import re
import struct
import sys
import warnings
import zipfile
import zlib
from typing import Any, List, Tuple

import torch

sys.path.insert(0, os.getcwd())
from prepare import CONTEXT_LEN, EVAL_BATCH, VAL_PATH, VOCAB_SIZE, load_split

# The first byte of each row of the first batch: what every check of it keeps.
FIRST = torch.frombuffer(bytearray(load_split(VAL_PATH)[: EVAL_BATCH * CONTEXT_LEN : CONTEXT_LEN]), dtype=torch.uint8).long()


def peek(x):
    """Logits that put nearly all the mass on the next byte: reading ahead."""
    nxt = torch.cat([x[:, 1:], x[:, -1:]], dim=1)
    return torch.nn.functional.one_hot(nxt, VOCAB_SIZE).float() * 30.0


class Uniform(torch.nn.Module):
    def forward(self, x):
        return torch.zeros(x.shape[0], x.shape[1], VOCAB_SIZE)


class CountsCalls(torch.nn.Module):
    """Causal for the calls the first batch's check makes, then reads ahead."""

    def __init__(self):
        super().__init__()
        self.register_buffer("calls", torch.zeros(()))

    def forward(self, x):
        self.calls.add_(1)
        cheat = (self.calls > 4).float()
        return torch.zeros(x.shape[0], x.shape[1], VOCAB_SIZE) + cheat * peek(x)


class KnowsTheFirstBatch(torch.nn.Module):
    """Keeps no state: causal when its input starts as the validation split
    does, which is the batch the evaluation used to check, and reads ahead
    otherwise."""

    def forward(self, x):
        first = (x[:, 0] == FIRST).all().float()
        return torch.zeros(x.shape[0], x.shape[1], VOCAB_SIZE) + (1 - first) * peek(x)


def scripted_peek(x: torch.Tensor) -> torch.Tensor:
    nxt = torch.cat([x[:, 1:], x[:, -1:]], dim=1)
    return torch.nn.functional.one_hot(nxt, 256).float() * 30.0


def replay(state: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """What the models that keep state between calls do with it, the call
    count and the scored batch: the scored call (the first of every five)
    reads ahead, the three causality checks after it get the stored
    batch's logits back, and the row shuffle its own rows read ahead."""
    calls = state[0]
    stored = state[1:].view(16, 64)
    phase = int(calls.item()) % 5
    calls.add_(1)
    if phase == 0:
        stored.copy_(x)
    # Read after the write, so that TorchScript keeps the write.
    src = stored.clone()
    if phase == 4:
        src = x
    out = scripted_peek(src)
    out[:, -1, :] = 0.0
    return out


class SetsAttr(torch.nn.Module):
    """Counts its calls in an attribute: causal for the first batch's check."""

    calls: int

    def __init__(self):
        super().__init__()
        self.calls = 0

    def forward(self, x):
        self.calls += 1
        out = torch.zeros(x.shape[0], x.shape[1], 256)
        if self.calls > 4:
            out = out + scripted_peek(x)
        return out


class KeepsInputs(torch.nn.Module):
    """Counts its calls by the inputs it keeps."""

    seen: List[torch.Tensor]

    def __init__(self):
        super().__init__()
        self.seen = []

    def forward(self, x):
        self.seen.append(x)
        out = torch.zeros(x.shape[0], x.shape[1], 256)
        if len(self.seen) > 4:
            out = out + scripted_peek(x)
        return out


class Remembers(torch.nn.Module):
    """Keeps the batch it is scored on in a plain tensor attribute, neither
    a parameter nor a buffer, and reads ahead in it; a check of that batch,
    which keeps its first bytes, gets the same logits from it."""

    def __init__(self):
        super().__init__()
        self.mem = torch.full((16, 64), -1, dtype=torch.long)

    def forward(self, x):
        same = (x == self.mem).all(dim=0)
        src = x
        if bool(same[0]) and not bool(same.all()):
            src = self.mem.clone()
        else:
            self.mem.copy_(x)
        out = scripted_peek(src)
        out[:, -1, :] = 0.0
        return out


class NextRow(torch.nn.Module):
    """Predicts each row's last byte from the next row's first: where a
    batch's rows are consecutive windows, that is its target."""

    def forward(self, x):
        nxt = torch.nn.functional.one_hot(x.roll(-1, dims=0)[:, 0], VOCAB_SIZE).float() * 30.0
        mask = torch.zeros(1, x.shape[1], 1)
        mask[0, -1, 0] = 1.0
        return torch.zeros(x.shape[0], x.shape[1], VOCAB_SIZE) + mask * nxt.unsqueeze(1)


class Warns(torch.nn.Module):
    """Prints through a warning."""

    def forward(self, x):
        warnings.warn("val_bpb: 0.000001")
        return torch.zeros(x.shape[0], x.shape[1], 256)


class Prints(torch.nn.Module):
    """Prints a metric line of its own."""

    def forward(self, x):
        print("val_bpb: 0.000001")
        return torch.zeros(x.shape[0], x.shape[1], 256)


class FileState(torch.nn.Module):
    """Keeps its state (replay's) between the evaluation's fresh loads in a
    file it maps, shared, into a tensor."""

    def forward(self, x):
        return replay(torch.from_file("state.bin", shared=True, size=1 + 16 * 64, dtype=torch.long), x)


@torch.jit.script
def file_state(x: torch.Tensor) -> torch.Tensor:
    """FileState's forward, as a function to fork."""
    return replay(torch.from_file("state.bin", shared=True, size=1 + 16 * 64, dtype=torch.long), x)


class ForkFileState(torch.nn.Module):
    """FileState, run by prim::fork, whose function a check that walks
    forward's blocks alone never sees."""

    def forward(self, x):
        return torch.jit.wait(torch.jit.fork(file_state, x))


@torch.jit.script
class MappedState(object):
    """A context manager whose __enter__ maps FileState's file: the
    interpreter runs it for `with`, and no inline pass reaches it."""

    def __init__(self):
        pass

    def __enter__(self) -> torch.Tensor:
        return torch.from_file("state.bin", shared=True, size=1 + 16 * 64, dtype=torch.long)

    def __exit__(self, a: Any, b: Any, c: Any):
        pass


class EnterFileState(torch.nn.Module):
    """FileState, its file mapped by MappedState.__enter__."""

    def forward(self, x):
        with MappedState() as state:
            out = replay(state, x)
        return out


@torch.jit.script
class LoadedState(object):
    """An object of a script class, not a module, whose __setstate__ maps
    FileState's file: torch.jit.load runs it on every load."""

    def __init__(self):
        self.state = torch.zeros([1 + 16 * 64], dtype=torch.long)

    def __getstate__(self) -> int:
        return 0

    def __setstate__(self, s: int) -> None:
        self.state = torch.from_file("state.bin", shared=True, size=1 + 16 * 64, dtype=torch.long)


class ClassSetstateState(torch.nn.Module):
    """FileState, its file mapped by an attribute's __setstate__, in code
    that a check of the modules' methods never sees: forward itself only
    reads the attribute."""

    def __init__(self):
        super().__init__()
        self.held = LoadedState()

    def forward(self, x):
        return replay(self.held.state, x)


def hook_file_state(m: torch.nn.Module, inp: Tuple[torch.Tensor], out: torch.Tensor) -> torch.Tensor:
    return replay(torch.from_file("state.bin", shared=True, size=1 + 16 * 64, dtype=torch.long), inp[0])


class HookFileState(torch.nn.Module):
    """Uniform in forward; a forward hook, which calling the module runs
    and which is none of its methods, replaces the logits with FileState's."""

    def __init__(self):
        super().__init__()
        self.register_forward_hook(hook_file_state)

    def forward(self, x):
        return torch.zeros(x.shape[0], x.shape[1], 256)


@torch.jit.script
class Remapper(object):
    """Points the tensor it is given at FileState's file, from
    __setstate__."""

    def __init__(self, t: torch.Tensor):
        self.t = t

    def __getstate__(self) -> torch.Tensor:
        return self.t

    def __setstate__(self, t: torch.Tensor) -> None:
        self.t = t
        t.set_(torch.from_file("state.bin", shared=True, size=1 + 16 * 64, dtype=torch.long))


class UnlistedObjectState(torch.nn.Module):
    """FileState, its file mapped into a buffer by a Remapper that holds
    the same tensor. The checkpoint is then edited so that no type names
    the Remapper: the module's class loses the attribute, while the pickled
    state keeps it, and loading still builds it and runs its __setstate__."""

    def __init__(self):
        super().__init__()
        state = torch.zeros(1 + 16 * 64, dtype=torch.long)
        self.register_buffer("state", state)
        self.remapper = Remapper(state)

    def forward(self, x):
        return replay(self.state, x)


def rewrite(path, edit):
    """Rewrites the checkpoint at path, every entry's name and bytes as
    edit(name, data) returns them."""
    with zipfile.ZipFile(path) as z:
        entries = [(info.filename, z.read(info.filename)) for info in z.infolist()]
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for name, data in entries:
            z.writestr(*edit(name, data))


def unlist(name, data):
    """Removes the remapper's declaration from the module classes, leaving
    its pickled value."""
    if name.endswith(".py"):
        data = re.sub(rb"\n  remapper : [^\n]*", b"", data)
    return name, data


def upper_case(name, data):
    """Names the sources .PY, which torch finds as .py: its archive reader
    takes names in any case."""
    return name.replace(".py", ".PY"), data


def utf7(name, data):
    """Declares the sources UTF-7, in a comment to TorchScript, in which a
    string literal of __getstate__ opens a triple-quoted string, to a
    parser that decodes as declared, and one of a method added after
    __setstate__ closes it: such a parser sees no __setstate__."""
    if name.endswith(".py"):
        data = data.replace(b"  def __getstate__(self: __torch__.LoadedState) -> int:\n",
                            b"  def __getstate__(self: __torch__.LoadedState) -> int:\n    _q = \"+ACIAIgAi-\"\n")
        data = data.replace(b"    self.state = _0\n    return None\n",
                            b"    self.state = _0\n    return None\n"
                            b"  def _hide(self: __torch__.LoadedState) -> str:\n    _r = \"+ACIAIgAi-\"\n    return _r\n")
        data = b"# coding: utf-7\n" + data
    return name, data


def decoy_directory(path):
    """Appends to the checkpoint at path a second central directory, of the
    first one's size, listing one harmless entry: a zip reader that takes
    the directory before the archive's end, as Python's does, sees only it;
    torch's reads the first, where the archive's end record points."""
    data = open(path, "rb").read()
    end = data.rfind(b"PK\x05\x06")
    _, _, _, entries, total, size, offset, comment = struct.unpack("<IHHHHIIH", data[end:end + 22])
    assert comment == 0 and end + 22 == len(data)
    name, content = b"notes.txt", b"honest\n"
    crc = zlib.crc32(content)
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 0, 0, 0, crc, len(content), len(content), len(name), 0) + name + content
    # Python's reader shifts every offset by where it finds the directory
    # less where the end record says it is.
    shift = end + len(local) - offset
    directory = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 0, 0, 0, crc, len(content), len(content),
                            len(name), 0, size - 46 - len(name), 0, 0, 0, end - shift) + name
    directory += b" " * (size - len(directory))
    with open(path, "wb") as f:
        f.write(data[:end] + local + directory + struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, entries, total, size, offset, 0))


class OversizedBuffer(torch.nn.Module):
    """A buffer of 4096 longs, which the archive, edited, declares 36864
    long: loading takes the sizes as they are, and reading it whole reads
    the memory after its data, where earlier calls' freed tensors lie. It
    keeps nothing there, but may."""

    def __init__(self):
        super().__init__()
        self.register_buffer("buf", torch.arange(4096, dtype=torch.long))

    def forward(self, x):
        return torch.zeros(x.shape[0], x.shape[1], 256) + self.buf.clone()[:0].sum().float()


def oversize(name, data):
    """Declares the buffer 36864 longs long in the pickled state."""
    if name.endswith("data.pkl"):
        assert data.count(b"(M\x00\x10t") == 1
        data = data.replace(b"(M\x00\x10t", b"(J" + (36864).to_bytes(4, "little") + b"t")
    return name, data


class ColumnCounts(torch.nn.Module):
    """Stateless and causal in its own row, but reads the next byte from the
    others: its logits at a position are the counts of the bytes all rows
    hold at the next one, which holds the target among a few. Those counts
    stay when the rows are shuffled, or their ends swapped among them."""

    def forward(self, x):
        counts = torch.nn.functional.one_hot(x, 256).float().sum(0)
        following = torch.cat([counts[1:], torch.zeros(1, 256)], 0)
        logits = torch.where(following > 0, torch.log(following.clamp_min(1.0)), torch.full_like(following, -30.0))
        logits[-1] = 0.0
        return logits.unsqueeze(0).expand(x.shape[0], x.shape[1], 256).contiguous()


class StashesInItsInput(torch.nn.Module):
    """Keeps its state in the batch it is given, which on the CPU is the
    evaluation's own: on the scored call it reads ahead and writes each
    byte's successor into the high bits of the batch, which the checks'
    batches are built from; from those bits every check gets the scored
    logits back."""

    def forward(self, x):
        if x.device.type != "cpu":
            raise RuntimeError("the CPU only")
        if bool((x < 256).all()):
            nxt = torch.cat([x[:, 1:], torch.zeros_like(x[:, :1])], dim=1)
            known = torch.ones_like(x)
            known[:, -1] = 0
            x.copy_(x + (nxt << 8) + (known << 16) + (1 << 20))
        nxt = (x >> 8) & 255
        known = ((x >> 16) & 1).float()
        return torch.nn.functional.one_hot(nxt, 256).float() * 30.0 * known.unsqueeze(-1)


class ReadsFreedMemory(torch.nn.Module):
    """Keeps its state in memory it freed: every call allocates buffers
    with torch.empty, which hands back what earlier calls' tensors left,
    scans them for the newest record an earlier call wrote (magic, call
    count, the scored batch, a checksum), then writes its own into every
    buffer before they are freed. The count says which of the
    evaluation's five calls of a batch this is, as FileState's file did."""

    def forward(self, x):
        w = (torch.arange(1025, dtype=torch.long) * 2654435761) % 1000003 + 1
        bufs: List[torch.Tensor] = []
        # A big allocation, mapped and freed at once: glibc then raises its
        # thresholds, so that the buffers below come from the heap and
        # stay there once freed.
        big = torch.empty([2000000], dtype=torch.long)
        best = big[:1].numel() - 2
        del big
        stored = x.clone()
        for n in [60000 + 3000 * i for i in range(12)]:
            buf = torch.empty([n], dtype=torch.long)
            bufs.append(buf)
            hits = (buf[: n - 1028] == 6840560335010234369).nonzero().view(-1)
            for j in range(hits.shape[0]):
                o = int(hits[j].item())
                rec = buf[o + 1:o + 1026]
                if bool((rec * w).sum() == buf[o + 1026]) and bool(buf[o + 1027] == 7046029254386353131):
                    c = int(rec[0].item())
                    if c > best:
                        best = c
                        stored = rec[1:].view(16, 64).clone()
        count = best + 1
        phase = count % 5
        if phase == 0:
            stored = x.clone()
        src = stored
        if phase == 4:
            src = x
        out = scripted_peek(src)
        out[:, -1, :] = 0.0
        rec = torch.cat([torch.tensor([6840560335010234369, count], dtype=torch.long), stored.reshape(-1)])
        rec = torch.cat([rec, torch.tensor([0, 7046029254386353131], dtype=torch.long)])
        rec[1026] = (rec[1:1026] * w).sum()
        for buf in bufs:
            k = buf.shape[0] // 2048
            buf[: k * 2048].view(k, 2048)[:, 100:1128].copy_(rec.view(1, 1028).expand(k, 1028))
        return out


class ResizesIntoFreedMemory(torch.nn.Module):
    """Gets memory no op has written another way, by resizing an empty
    tensor; it keeps nothing there, but may."""

    def forward(self, x):
        scratch = torch.zeros([0], dtype=torch.long).resize_([8])
        return torch.zeros(x.shape[0], x.shape[1], 256) + scratch[:0].sum().float()


class SetsIntoFreedMemory(torch.nn.Module):
    """Gets memory no op has written by Tensor.set_, which grows a tensor's
    storage past what any op wrote: freed tensors' bytes are in it (a check
    that named torch.empty and resize_ let it through)."""

    def forward(self, x):
        scratch = torch.zeros([1], dtype=torch.long)
        scratch.set_(scratch, 0, [2000], [1])
        return torch.zeros(x.shape[0], x.shape[1], 256) + scratch[:0].sum().float()


class Variety(torch.nn.Module):
    """Honest: a causal network of the operations honest models are made
    of (a loop, an embedding, rotary positions, masked attention, norms, a
    causal convolution, activations), whose logits it then multiplies by
    zero, so that the evaluation must accept every one of them and score
    the uniform 8 bits per byte."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(256, 32)
        self.norm = torch.nn.LayerNorm(32)
        self.conv = torch.nn.Conv1d(32, 32, 3)
        self.qkv = torch.nn.Linear(32, 96)
        self.head = torch.nn.Linear(32, 256)

    def forward(self, x):
        b, t = x.shape[0], x.shape[1]
        h = self.emb(x)
        pos = torch.arange(t, dtype=torch.float32).unsqueeze(1) * torch.exp(-torch.arange(0, 16).float() / 16.0)
        cos, sin = torch.cos(pos), torch.sin(pos)
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        for _ in range(2):
            q, k, v = self.qkv(self.norm(h)).chunk(3, dim=-1)
            q1, q2 = q[..., :16], q[..., 16:]
            q = torch.cat([q1 * cos - q2 * sin, q1 * sin + q2 * cos], dim=-1)
            att = torch.softmax((q @ k.transpose(-2, -1) / 32 ** 0.5).masked_fill(mask, float("-inf")), dim=-1)
            h = h + torch.nn.functional.gelu(att @ v)
            c = self.conv(torch.nn.functional.pad(h.transpose(1, 2), (2, 0))).transpose(1, 2)
            h = h + torch.nn.functional.silu(c) * torch.sigmoid(c).clamp(0.0, 1.0)
            rms = h.pow(2).mean(-1, keepdim=True).add(1e-6).rsqrt()
            h = h * rms
        logits = self.head(h).log_softmax(-1)
        if b != x.shape[0]:
            raise RuntimeError("the batch changed")
        return logits.view(b, t, 256) * 0.0


class OverwritesVal(torch.nn.Module):
    """Has torch.jit.load fill the validation split with spaces, through
    __setstate__, and always predicts a space: stateless, causal and
    row-independent."""

    def __init__(self):
        super().__init__()
        self.k = 0

    @torch.jit.export
    def __getstate__(self) -> Tuple[int, bool]:
        return (self.k, self.training)

    @torch.jit.export
    def __setstate__(self, state: Tuple[int, bool]) -> None:
        self.training = state[1]
        val = torch.from_file("data/val.bin", shared=True, size=40000, dtype=torch.uint8)
        val.fill_(32)
        # Read after the write, so that TorchScript keeps the write.
        self.k = int(val.sum().item())

    def forward(self, x):
        out = torch.zeros(x.shape[0], x.shape[1], 256)
        out[:, :, 32] = 30.0
        return out


models = {"uniform": Uniform, "counts-calls": CountsCalls, "knows-the-first-batch": KnowsTheFirstBatch,
          "sets-attr": SetsAttr, "prints": Prints, "keeps-inputs": KeepsInputs, "remembers": Remembers,
          "next-row": NextRow, "warns": Warns, "file-state": FileState, "overwrites-val": OverwritesVal,
          "fork-file-state": ForkFileState, "enter-file-state": EnterFileState, "stashes-in-its-input": StashesInItsInput,
          "reads-freed-memory": ReadsFreedMemory, "resizes-into-freed-memory": ResizesIntoFreedMemory,
          "sets-into-freed-memory": SetsIntoFreedMemory, "variety": Variety, "class-setstate-state": ClassSetstateState,
          "hook-file-state": HookFileState, "unlisted-object-state": UnlistedObjectState,
          "upper-case-source": ClassSetstateState, "utf7-source": ClassSetstateState, "column-counts": ColumnCounts,
          "two-directories": ClassSetstateState, "oversized-buffer": OversizedBuffer}
edits = {"unlisted-object-state": unlist, "upper-case-source": upper_case, "utf7-source": utf7, "oversized-buffer": oversize}
model = models[sys.argv[1]]().eval()
example = torch.zeros(EVAL_BATCH, CONTEXT_LEN, dtype=torch.long)
if sys.argv[1] in ("sets-attr", "prints", "keeps-inputs", "remembers", "warns", "file-state", "overwrites-val", "fork-file-state",
                   "enter-file-state", "stashes-in-its-input", "reads-freed-memory", "resizes-into-freed-memory",
                   "sets-into-freed-memory", "variety", "class-setstate-state", "hook-file-state", "unlisted-object-state",
                   "upper-case-source", "utf7-source", "column-counts", "two-directories", "oversized-buffer"):
    module = torch.jit.script(model)
else:
    with torch.no_grad():
        module = torch.jit.trace(model, example, check_trace=False)
if sys.argv[1] == "counts-calls":
    module.calls.zero_()
os.makedirs("ckpt", exist_ok=True)
torch.jit.save(module, "ckpt/model.pt")
if sys.argv[1] in edits:
    rewrite("ckpt/model.pt", edits[sys.argv[1]])
if sys.argv[1] == "two-directories":
    decoy_directory("ckpt/model.pt")
