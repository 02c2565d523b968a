"""Fixed evaluation for the nanogpt-torch example: prints `val_bpb: X`.

Loads the TorchScript checkpoint that train.py exported (no model code is
imported), checks that the model keeps no state between calls and prints
nothing, and scores every byte of the fixed validation split at a fixed
context length, checking on every batch that the model is causal. val_bpb is
the mean negative log2-likelihood per byte; tokens are bytes, so no
tokenizer conversion is involved.

A TorchScript module is code the researcher wrote. One that counted its
calls, or kept its inputs, could be causal while it is checked and read
ahead otherwise; one that recognised the checked batch could do the same.
So every call gets a module freshly loaded from the checkpoint's bytes, with
the random generator reseeded, and nothing of one call reaches the next; the
model may run only operations that compute from their inputs alone (no
printing, no files, no memory that no op has written), may not set an
attribute or hold a list or dict (which a fresh module makes harmless, but
which no honest model needs), in any of its methods, nor have a forward
hook, which calling it runs, nor name __setstate__ in its code, which
loading runs (the archive is read for it before loading), nor hold a tensor
that reaches past its data; the validation split is read before any of its
code runs; and every batch is checked at split points drawn from the
operating system's randomness, with the later bytes replaced by real text
from another batch, which the model cannot tell from the batch it is scored
on. A batch's rows lie far apart in the text, and a row must keep its
logits in another place among other text, so that no row learns another's
target.
"""
import io
import math
import os
import random
import sys
import time

# Idle OpenMP threads sleep instead of spinning, as in train.py.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import torch
import torch.nn.functional as F

from prepare import CONTEXT_LEN, EVAL_BATCH, VAL_PATH, VOCAB_SIZE, load_split

CKPT_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ckpt", "model.pt")
CAUSALITY_CHECKS = 3  # split points per batch
CAUSALITY_ATOL = 1e-4
# What a model may run: operations that compute their outputs from their
# inputs alone, over the tensors of the call and of the freshly loaded
# module. Anything else is refused, since a model that keeps state between
# calls, or prints, or reaches a file, has more ways to than any list of
# them would name: a list of what to refuse let through, in turn, a file
# mapped in a forked function and in a context manager, the freed memory
# torch.empty and resize_ hand back, and then the same through
# Tensor.set_. Of an allowed aten operation, the in-place form (name_) is
# allowed too: it writes only its own operand. Some names are of later
# PyTorch versions than others.
ALLOWED = {
    "prim": """Constant GetAttr ListConstruct ListUnpack TupleConstruct TupleUnpack TupleIndex
        NumToTensor If Loop RaiseException Uninitialized unchecked_cast isinstance dtype device
        shape is_cuda layout type min max abs ConstantChunk""",
    "aten": """
        add sub rsub mul div true_divide floor_divide remainder fmod neg abs sign pow sqrt rsqrt
        exp exp2 expm1 log log2 log10 log1p reciprocal square clamp clamp_min clamp_max clip
        minimum maximum floor ceil round trunc frac lerp addcmul addcdiv where masked_fill
        relu relu6 leaky_relu gelu silu sigmoid tanh softplus elu selu celu mish hardtanh
        hardswish hardsigmoid glu softmax log_softmax logsumexp dropout feature_dropout
        sin cos tan asin acos atan atan2 sinh cosh erf erfc
        sum mean std var std_mean var_mean amax amin argmax argmin prod norm linalg_vector_norm
        cumsum cumprod all any topk sort argsort
        eq ne lt le gt ge logical_and logical_or logical_not logical_xor isnan isinf isfinite
        __and__ __or__ __xor__ __not__ __lshift__ __rshift__ bitwise_and bitwise_or bitwise_xor
        bitwise_not bitwise_left_shift bitwise_right_shift
        linear matmul mm bmm addmm baddbmm einsum outer dot t
        embedding layer_norm group_norm batch_norm conv1d conv2d _convolution one_hot
        scaled_dot_product_attention rms_norm pad constant_pad_nd
        view reshape flatten unflatten squeeze unsqueeze transpose permute contiguous expand
        expand_as repeat repeat_interleave tile slice select narrow index_select gather scatter
        scatter_add index index_put masked_select split split_with_sizes chunk unbind cat stack
        flip roll tril triu diagonal view_as reshape_as movedim detach clone alias
        zeros ones full arange linspace eye zeros_like ones_like full_like new_zeros new_ones
        new_full tensor scalar_tensor fill zero copy
        to type_as cpu cuda
        dim size numel item Int Float Bool ScalarImplicit IntImplicit FloatImplicit
        __getitem__ len append __range_length __derive_index floordiv __is__ __isnot__
        is_floating_point""",
}
ALLOWED_KINDS = {f"{ns}::{op}" for ns, ops in ALLOWED.items() for op in ops.split()}

# Why some of what is refused is refused, for the error message.
REFUSED = {
    "prim::SetAttr": "sets an attribute",
    "prim::Print": "prints",
    "aten::warn": "warns",
    # from_file maps a file into a tensor, through which a model would
    # count its calls, or change the files the evaluation reads; save
    # writes one.
    "aten::from_file": "maps a file",
    "aten::save": "writes a file",
    # Code these run is in no graph the check walks: a script class's
    # __enter__ and __exit__ and its other methods, a method or function
    # left uninlined, the function prim::fork runs.
    "prim::Enter": "enters a context manager",
    "prim::Exit": "leaves a context manager",
    "prim::CallMethod": "calls a method the check cannot see into",
    "prim::CallFunction": "calls a function the check cannot see into",
    "prim::fork": "runs a function as a task of its own",
    "prim::CreateObject": "makes an object of a class whose methods the check cannot see into",
    # Grad mode is the process's: a call that flips it leaves a bit for
    # the next.
    "aten::set_grad_enabled": "changes grad mode",
}

# Ops that hand back memory no op has written: an earlier call's tensors,
# freed, are still in it (a model that scanned torch.empty buffers for a
# record it had left there scored 0.13 bits per byte).
UNINITIALIZED = ("aten::empty", "aten::new_empty", "aten::_empty", "aten::resize", "aten::_resize",
                 "aten::set_", "aten::sparse_resize", "aten::_copy_from_and_resize", "prims::empty",
                 "prims::resize")


def allowed(kind):
    return kind in ALLOWED_KINDS or (kind.startswith("aten::") and kind.endswith("_") and kind[:-1] in ALLOWED_KINDS)


def fail(message):
    print(f"eval error: {message}", file=sys.stderr)
    sys.exit(1)


def windows(val):
    """Splits val into EVAL_BATCH-sized batches of (input, target, weight).

    Windows overlap by one byte, so every byte after the first is a target
    exactly once. A batch's rows are windows far apart (batch b holds
    windows b, b + n, b + 2n, … of n batches), so that no row holds the
    byte another row's last position must predict. Batches are padded to
    the full shape, with weight 0 on padding, because a traced model may
    only accept the shape it was traced with.
    """
    data = torch.frombuffer(bytearray(val), dtype=torch.uint8).long()
    starts = list(range(0, len(data) - 1, CONTEXT_LEN))
    batches = -(-len(starts) // EVAL_BATCH)
    for b in range(batches):
        x = torch.zeros(EVAL_BATCH, CONTEXT_LEN, dtype=torch.long)
        y = torch.zeros(EVAL_BATCH, CONTEXT_LEN, dtype=torch.long)
        w = torch.zeros(EVAL_BATCH, CONTEXT_LEN)
        for row, start in enumerate(starts[b::batches]):
            n = min(CONTEXT_LEN, len(data) - 1 - start)
            x[row, :n] = data[start : start + n]
            y[row, :n] = data[start + 1 : start + 1 + n]
            w[row, :n] = 1.0
        yield x, y, w


def graph_nodes(block):
    """Every node of block and of the blocks in its nodes."""
    for node in block.nodes():
        yield node
        for inner in node.blocks():
            yield from graph_nodes(inner)


def methods(model):
    """Every compiled method of the model and of its submodules, with what
    they call inlined: forward and every exported method."""
    for prefix, module in model.named_modules():
        for name in module._c._method_names():
            graph = module._c._get_method(name).graph.copy()
            torch._C._jit_pass_inline(graph)
            yield ".".join(filter(None, (prefix, name))), graph


def check_archive(data):
    """Fails when the checkpoint's code names __setstate__: torch.jit.load
    runs a class's __setstate__ for every object of the class it unpickles,
    whether or not the module it makes names the class, before any check
    could look at that module. The archive is read by torch's own reader,
    which finds the entries that loading reads (a zip reader of another
    kind read a directory of entries that a second one, which torch read,
    hid), and every source entry, whatever the case of its name, is
    searched as bytes: no encoding it declares, and no parser that reads it
    otherwise than TorchScript, hides the name."""
    try:
        archive = torch._C.PyTorchFileReader(io.BytesIO(data))
        sources = [(name, archive.get_record(name)) for name in archive.get_all_records() if name.lower().endswith(".py")]
    except RuntimeError as exc:
        fail(f"cannot read {CKPT_PATH} as a TorchScript archive: {exc}")
    for name, source in sources:
        if b"__setstate__" in source:
            fail(f"the model's code names __setstate__ ({name}), code that runs whenever it is loaded; it must compute its logits from its input alone")


def tensors(value):
    """The tensors in an attribute's value: itself, or those of the tuple it
    is."""
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, tuple):
        for item in value:
            yield from tensors(item)


def check_extent(name, t):
    """Fails when tensor t reaches past the data it was loaded with: loading
    takes a tensor's sizes and strides from the archive as they are, and an
    operation that reads it whole (clone) would read the memory after its
    data, where earlier calls' freed tensors lie."""
    if t.numel() == 0:
        return
    last = t.storage_offset() + sum((size - 1) * stride for size, stride in zip(t.shape, t.stride()))
    storage = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    if min(t.stride(), default=0) < 0 or (last + 1) * t.element_size() > storage.nbytes():
        fail(f"the model's tensor {name} reaches past the data it holds; it must compute its logits from its input alone")


def check_pure(model):
    """Fails when the model's code runs anything but the allowed
    operations, in any of its methods, or holds a list or dict; or when it
    has forward hooks, code that is none of its methods but that calling
    the module runs."""
    for prefix, module in model.named_modules():
        if module._c._get_forward_hooks() or module._c._get_forward_pre_hooks():
            fail(f"the model has forward hooks ({prefix or 'its top module'}), code that runs around forward; it must compute its logits in forward alone")
        try:
            attributes = torch._C._jit_debug_module_iterators(module._c)["named_attributes"]
        except RuntimeError as exc:
            fail(f"cannot read the attributes of the model's {prefix or 'top module'}: {exc}")
        for name, value in attributes:
            for t in tensors(value):
                check_extent(".".join(filter(None, (prefix, name))), t)
    for name, graph in methods(model):
        for node in graph_nodes(graph):
            kind = node.kind()
            if kind == "prim::Constant" and node.hasAttribute("value") and node.kindOf("value") == "t":
                check_extent(f"constant in {name}", node.t("value"))
            if kind in REFUSED:
                fail(f"the model {REFUSED[kind]} ({kind} in {name}); it must compute its logits from its input alone")
            if kind.startswith(UNINITIALIZED):
                fail(f"the model reads uninitialized memory ({kind} in {name}), where an earlier call can leave state; it must compute its logits from its input alone")
            if not allowed(kind):
                fail(f"the model runs {kind} (in {name}), which is not among the operations the evaluation allows (ALLOWED in eval.py): those that compute their outputs from their inputs alone")
            if kind == "prim::GetAttr" and isinstance(node.output().type(), (torch._C.ListType, torch._C.DictType)):
                fail(f"the model holds a {node.output().type()} attribute, which it could change between calls")


class Model:
    """The checkpoint, called as the evaluation calls it: a module freshly
    loaded for every call, which must return logits of the fixed shape."""

    def __init__(self, data, device):
        self.data, self.device = data, device
        check_archive(data)
        check_pure(self.module())

    def module(self):
        try:
            return torch.jit.load(io.BytesIO(self.data), map_location=self.device).eval()
        except Exception as exc:
            fail(f"cannot load {CKPT_PATH} as TorchScript: {exc}")

    def __call__(self, x):
        torch.manual_seed(0)
        # A copy: the module may write its input, which on the CPU would
        # otherwise be the evaluation's own batch, that the checks build on.
        out = self.module()(x.to(self.device, copy=True))
        if not isinstance(out, torch.Tensor) or tuple(out.shape) != (EVAL_BATCH, CONTEXT_LEN, VOCAB_SIZE):
            shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
            fail(f"model output is {shape}, want logits of shape {(EVAL_BATCH, CONTEXT_LEN, VOCAB_SIZE)}")
        return out.float()


def check_causal(model, x, logits, other, rng):
    """Fails when a position's logits depend on later bytes, which would let
    the model read the byte it is asked to predict: the bytes from a random
    split on are replaced by those of another batch's rows, far off in the
    text, and the logits before it must not move."""
    for _ in range(CAUSALITY_CHECKS):
        split = rng.randrange(1, CONTEXT_LEN)
        changed = x.clone()
        changed[:, split:] = other()[:, split:]
        diff = (model(changed)[:, :split] - logits[:, :split]).abs().max().item()
        if not diff <= CAUSALITY_ATOL:
            fail(f"model is not causal: logits before position {split} change by {diff:.3g} when later bytes change")


def check_rows(model, x, logits, other, rng):
    """Fails when a row's logits depend on anything but the row: on where it
    stands in the batch, or on the other rows. Half the rows, drawn at
    random, are kept and put in places drawn at random; the other places get
    another batch's rows; the kept rows must get their own logits back. (A
    check that shuffled the batch's own rows kept the bytes that the rows
    hold at each position, from which a model learned each row's next byte
    among a few: 3.2 bits per byte from no training at all.)"""
    rows, places = list(range(EVAL_BATCH)), list(range(EVAL_BATCH))
    rng.shuffle(rows)
    rng.shuffle(places)
    kept, places = rows[: EVAL_BATCH // 2], places[: EVAL_BATCH // 2]
    mixed = other().clone()
    mixed[places] = x[kept]
    diff = (model(mixed)[places] - logits[kept]).abs().max().item()
    if not diff <= CAUSALITY_ATOL:
        fail(f"model mixes the rows of a batch: a row's logits change by {diff:.3g} with its place and the other rows")


def evaluate(model, val):
    rng = random.SystemRandom()
    batches = list(windows(val))
    total_nats, total_bytes = 0.0, 0.0
    for b, (x, y, w) in enumerate(batches):

        def other():
            """Another batch's rows, or with a single batch its own, shifted
            half a context along."""
            if len(batches) == 1:
                return x.roll(CONTEXT_LEN // 2, dims=1)
            return batches[(b + rng.randrange(1, len(batches))) % len(batches)][0]

        logits = model(x)
        check_causal(model, x, logits, other, rng)
        check_rows(model, x, logits, other, rng)
        nll = F.cross_entropy(logits.reshape(-1, VOCAB_SIZE), y.to(model.device).reshape(-1), reduction="none")
        total_nats += (nll.double().cpu() * w.reshape(-1).double()).sum().item()
        total_bytes += w.sum().item()
    return total_nats / total_bytes / math.log(2)


def load(device):
    with open(CKPT_PATH, "rb") as f:
        return Model(f.read(), device)


def main():
    start = time.time()
    if not os.path.exists(CKPT_PATH):
        fail(f"no checkpoint at {CKPT_PATH}: train.py must export a TorchScript module there")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        torch.set_num_threads(2)
    # The split is read before any of the model's code runs, which loading
    # it does: what that code does to the file afterwards changes nothing.
    val = load_split(VAL_PATH)
    model = load(device)
    with torch.no_grad():
        try:
            bpb = evaluate(model, val)
        except RuntimeError as exc:
            if device == "cpu":
                fail(f"model failed on the validation data: {exc}")
            # A trace can pin tensors it creates to the training device.
            print(f"evaluation on {device} failed ({str(exc).splitlines()[0]}); retrying on cpu", file=sys.stderr)
            bpb = evaluate(load("cpu"), val)
    if not math.isfinite(bpb):
        fail(f"val_bpb is {bpb}")
    print(f"eval_seconds: {time.time() - start:.1f}")
    print(f"val_bpb: {bpb:.6f}")


if __name__ == "__main__":
    main()
