# Kernel parity check for one target: the candidate function (new) must keep
# the baseline's signature and produce a tensor of the same shape and dtype
# that matches within atol/rtol on the baseline's fixture.
#
# The target arrives as JSON in argv[1] (never spliced into this source):
#   {"name", "new_module", "baseline_module", "fixture", "atol", "rtol", "dir"}
# Outcome: "PARITY_OK target=<name>" on stdout and exit 0, or one
# "PARITY_FAIL target=<name> kind=<kind> detail=<detail>" line on stderr and
# exit 1. Kinds: signature, shape (also dtype and non-tensor output),
# numerical, error (a module that does not import or a call that raises).
import importlib
import inspect
import json
import sys

DETAIL_LIMIT = 200

target = json.loads(sys.argv[1])
NAME = target["name"]


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


def load(role, spec):
    module, sep, attr = spec.partition(":")
    if not sep or not module or not attr:
        fail("error", f"{role} {spec!r} is not of the form module:function")
    try:
        return getattr(importlib.import_module(module), attr)
    except Exception as exc:  # the candidate's import errors are its failure, not a crash
        fail("error", f"load {role} {spec}: {describe(exc)}")


sys.path.insert(0, target["dir"])

try:
    import torch
except Exception as exc:
    fail("error", f"import torch: {describe(exc)}")

try:
    ATOL, RTOL = tolerance(target["atol"]), tolerance(target["rtol"])
except ValueError as exc:
    fail("error", f"tolerance: {exc}")

base_fn = load("baseline", target["baseline_module"])
fixture = load("fixture", target["fixture"])
new_fn = load("new", target["new_module"])

try:
    sig_new, sig_base = inspect.signature(new_fn), inspect.signature(base_fn)
except (TypeError, ValueError) as exc:
    fail("signature", describe(exc))
if str(sig_new) != str(sig_base):
    fail("signature", f"new{sig_new} vs baseline{sig_base}")


def run(role, fn):
    # A fresh, identically seeded fixture per call, so that a function that
    # mutates its inputs in place cannot change what the other one sees.
    torch.manual_seed(0)
    try:
        args, kwargs = fixture()
    except Exception as exc:
        fail("error", f"fixture {target['fixture']}: {describe(exc)}")
    try:
        with torch.no_grad():
            return fn(*args, **kwargs)
    except Exception as exc:
        fail("error", f"call {role}: {describe(exc)}")


out_base = run("baseline", base_fn)
out_new = run("new", new_fn)

if not (isinstance(out_new, torch.Tensor) and isinstance(out_base, torch.Tensor)):
    fail("shape", f"non-tensor output: new {type(out_new).__name__}, baseline {type(out_base).__name__}")
if out_new.shape != out_base.shape:
    fail("shape", f"shape {tuple(out_new.shape)} vs {tuple(out_base.shape)}")
if out_new.dtype != out_base.dtype:
    fail("shape", f"dtype {out_new.dtype} vs {out_base.dtype}")

try:
    torch.testing.assert_close(out_new, out_base, atol=ATOL, rtol=RTOL)
except AssertionError as exc:
    fail("numerical", exc)
except (TypeError, ValueError, RuntimeError) as exc:
    fail("error", f"assert_close: {describe(exc)}")

print(f"PARITY_OK target={NAME}")
