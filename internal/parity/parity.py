# Kernel parity check: each target's candidate function (new) must keep
# its baseline's signature and produce a tensor of the same shape and dtype
# that matches within atol/rtol on the baseline's fixture.
#
# The targets arrive as JSON in argv[1] (never spliced into this source):
#   {"dir", "targets": [{"name", "new_module", "baseline_module", "fixture",
#    "atol", "rtol"}, ...]}
# Outcome: a "PARITY_OK target=<name>" line on stdout for each target and
# exit 0, or one "PARITY_FAIL target=<name> kind=<kind> detail=<detail>"
# line on stderr, for the first target that fails, and exit 1. Kinds:
# signature, shape (also dtype and non-tensor output), numerical, error (a
# module that does not import or a call that raises).
#
# The candidate's code runs in child processes, one per target, never in
# this one: this process imports only torch and the fixed baselines and
# fixtures, judges what each child sends back through a pipe (loaded as
# tensors and plain values only), and alone prints the verdict. Every
# baseline and fixture is loaded, and every baseline's output computed,
# before the first child starts: a child can write the checkout (a later
# target's baseline, its fixture, a compiled module Python would load in
# their place), and what it writes there reaches no baseline. It makes
# itself undumpable first, so that a child of the same user can neither
# trace it nor write to its output through /proc. Nothing of the checkout
# is on its path but while it imports the fixed baselines and fixtures:
# python -c puts the working directory, the checkout, first, where a
# candidate's module named like one that torch imports, or tries to, would
# load here.
import os
import sys


def outside(root):
    """Drops from the path every entry at or under root, the checkout: ""
    and "." when it is the working directory, and any PYTHONPATH entry
    there."""
    root = os.path.realpath(root)

    def under(entry):
        entry = os.path.realpath(entry or ".")
        return entry == root or entry.startswith(root.rstrip(os.sep) + os.sep)

    sys.path[:] = [p for p in sys.path if not under(p)]


outside(os.getcwd())

import ctypes
import importlib
import inspect
import io
import json
import subprocess

DETAIL_LIMIT = 200
PR_SET_DUMPABLE = 4

CHECK = json.loads(sys.argv[1])
DIR = CHECK["dir"]
# NAME is the target being judged, which a failure names.
NAME = ""
outside(DIR)


def one_line(text):
    return " ".join(part.strip() for part in str(text).splitlines() if part.strip())[:DETAIL_LIMIT]


def fail(kind, detail):
    print(f"PARITY_FAIL target={NAME} kind={kind} detail={one_line(detail)}", file=sys.stderr)
    sys.exit(1)


def describe(exc):
    return f"{type(exc).__name__}: {exc}"


def tolerance(value):
    # An empty tolerance leaves assert_close's per-dtype default in force.
    return float(value) if value != "" else None


if sys.platform.startswith("linux"):
    try:
        if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0:
            fail("error", f"prctl(PR_SET_DUMPABLE): {os.strerror(ctypes.get_errno())}")
    except (OSError, AttributeError) as exc:
        fail("error", f"prctl(PR_SET_DUMPABLE): {describe(exc)}")

try:
    import torch
except Exception as exc:
    fail("error", f"import torch: {describe(exc)}")

def load(role, spec):
    module, sep, attr = spec.partition(":")
    if not sep or not module or not attr:
        fail("error", f"{role} {spec!r} is not of the form module:function")
    sys.path.insert(0, DIR)
    try:
        return getattr(importlib.import_module(module), attr)
    except Exception as exc:
        fail("error", f"load {role} {spec}: {describe(exc)}")
    finally:
        sys.path.remove(DIR)


def run(role, fn, fixture, spec):
    # A fresh, identically seeded fixture per call, so that a function that
    # mutates its inputs in place cannot change what the other one sees.
    torch.manual_seed(0)
    try:
        args, kwargs = fixture()
    except Exception as exc:
        fail("error", f"fixture {spec}: {describe(exc)}")
    try:
        with torch.no_grad():
            return fn(*args, **kwargs)
    except Exception as exc:
        fail("error", f"call {role}: {describe(exc)}")


# The child: load the candidate and the fixture, call the candidate, and
# send back its signature and output, or what went wrong, on the pipe whose
# descriptor is argv[2]. It reports through the pipe only. What it prints
# goes to this process's stderr, where a verdict line of its own counts for
# nothing: a PARITY_FAIL line fails the check whatever else was printed,
# and a pass takes this process's PARITY_OK and exit code 0.
CHILD = r'''
import importlib, inspect, io, json, os, sys
target, fd = json.loads(sys.argv[1]), int(sys.argv[2])
import torch
sys.path.insert(0, target["dir"])
def send(result):
    buf = io.BytesIO()
    torch.save(result, buf)
    with os.fdopen(fd, "wb") as out:
        out.write(buf.getvalue())
    sys.exit(0)
signature = None
def error(what, exc):
    send({"error": f"{what}: {type(exc).__name__}: {exc}", "signature": signature})
def load(role, spec):
    module, _, attr = spec.partition(":")
    try:
        return getattr(importlib.import_module(module), attr)
    except Exception as exc:
        error(f"load {role} {spec}", exc)
fixture = load("fixture", target["fixture"])
new_fn = load("new", target["new_module"])
try:
    signature = str(inspect.signature(new_fn))
except (TypeError, ValueError) as exc:
    send({"signature_error": f"{type(exc).__name__}: {exc}"})
torch.manual_seed(0)
try:
    args, kwargs = fixture()
except Exception as exc:
    error(f"fixture {target['fixture']}", exc)
try:
    with torch.no_grad():
        out = new_fn(*args, **kwargs)
except Exception as exc:
    error("call new", exc)
if isinstance(out, torch.Tensor):
    send({"signature": signature, "output": out.detach().contiguous().cpu()})
send({"signature": signature, "type": type(out).__name__})
'''


def run_new(target):
    read_end, write_end = os.pipe()
    try:
        child = subprocess.Popen(
            [sys.executable, "-B", "-c", CHILD, json.dumps(dict(target, dir=DIR)), str(write_end)],
            pass_fds=(write_end,), stdin=subprocess.DEVNULL, stdout=sys.stderr, stderr=sys.stderr,
            cwd=os.getcwd(),
        )
    finally:
        os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        sent = pipe.read()
    code = child.wait()
    if not sent:
        fail("error", f"the candidate's process exited with code {code} without a result (its output is in the log)")
    try:
        return torch.load(io.BytesIO(sent), weights_only=True)
    except Exception as exc:
        fail("error", f"the candidate's process sent what is not a result: {describe(exc)}")


def baseline(target):
    """Loads target's fixed baseline and fixture and computes the baseline's
    output, before any candidate's code runs."""
    global NAME
    NAME = target["name"]
    try:
        tolerances = tolerance(target["atol"]), tolerance(target["rtol"])
    except ValueError as exc:
        fail("error", f"tolerance: {exc}")
    base_fn = load("baseline", target["baseline_module"])
    fixture = load("fixture", target["fixture"])
    out_base = run("baseline", base_fn, fixture, target["fixture"])
    try:
        sig_base = inspect.signature(base_fn)
    except (TypeError, ValueError) as exc:
        fail("signature", describe(exc))
    return tolerances, sig_base, out_base


def judge(target, tolerances, sig_base, out_base):
    global NAME
    NAME = target["name"]
    result = run_new(target)
    if not isinstance(result, dict):
        fail("error", f"the candidate's process sent a {type(result).__name__}, not a result")
    if "signature_error" in result:
        fail("signature", result["signature_error"])
    sig_new = result.get("signature")
    if sig_new is not None and sig_new != str(sig_base):
        fail("signature", f"new{sig_new} vs baseline{sig_base}")
    if "error" in result:
        fail("error", result["error"])

    out_new = result.get("output")
    if not (isinstance(out_new, torch.Tensor) and isinstance(out_base, torch.Tensor)):
        kind = type(out_new).__name__ if out_new is not None else result.get("type")
        fail("shape", f"non-tensor output: new {kind}, baseline {type(out_base).__name__}")
    out_base = out_base.detach().cpu()
    if out_new.shape != out_base.shape:
        fail("shape", f"shape {tuple(out_new.shape)} vs {tuple(out_base.shape)}")
    if out_new.dtype != out_base.dtype:
        fail("shape", f"dtype {out_new.dtype} vs {out_base.dtype}")

    atol, rtol = tolerances
    try:
        torch.testing.assert_close(out_new, out_base, atol=atol, rtol=rtol)
    except AssertionError as exc:
        fail("numerical", exc)
    except (TypeError, ValueError, RuntimeError) as exc:
        fail("error", f"assert_close: {describe(exc)}")
    print(f"PARITY_OK target={NAME}", flush=True)


baselines = [baseline(target) for target in CHECK["targets"]]
for target, measured in zip(CHECK["targets"], baselines):
    judge(target, *measured)
