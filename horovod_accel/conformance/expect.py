"""Expected results, computed on the host from every rank's input, and the
comparison of a device's output with them.

Reductions follow upstream Horovod's semantics (and horovod_accel's CPU core):
each rank's input is multiplied by `prescale_factor`, the inputs are reduced
(Sum, Min, Max, Product; Average is Sum), and the result is multiplied by
`postscale_factor` (and by 1/N for Average, N = process-set size). Integer
tensors truncate toward zero after each multiplication. The host computes in
int64 / float64.

How results are compared (docs/conformance.md has the table):
- exact: integers, and floats of Sum/Min/Max/Product without scaling (the
  inputs are chosen so those results are exactly representable);
- integers of Average / scaled reductions: the truncation toward zero of the
  exact rational result, or (also accepted) the truncation of the float64
  product sum * (postscale * (1/N)) that upstream's Scale computes (the two
  differ only where rounding 1/N puts an exact integer just below itself);
- floats of Average / scaled reductions: |got - expected| <=
  (N + 2) * eps(dtype) * |f| * sum_r |x_r|, x_r the prescaled inputs and f the
  postscale factor (divided by N for Average): a few roundings of the terms'
  magnitude, whatever order the device sums in;
- data movement (allgather, broadcast, alltoall): bit for bit (NaN payloads,
  -0.0 and infinities included).
Outputs must also have the input's dtype, the expected shape and the device
the inputs were on.
"""
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Optional

import torch

from horovod_accel.conformance.plugin_memory import PluginTensor

SUM, AVERAGE, MIN, MAX, PRODUCT = "sum", "average", "min", "max", "product"

EPS = {
    torch.float16: 2.0**-10,
    torch.bfloat16: 2.0**-7,
    torch.float32: 2.0**-23,
    torch.float64: 2.0**-52,
}

_BITS_VIEW = {
    torch.bool: torch.uint8,
    torch.float16: torch.int16,
    torch.bfloat16: torch.int16,
    torch.float32: torch.int32,
    torch.float64: torch.int64,
}


def wide_dtype(dtype):
    return torch.float64 if dtype.is_floating_point else torch.int64


@dataclass
class Expected:
    """What one rank must get back.

    values: host tensor; int64/float64 for reductions (mode 'exact'/'tol'),
    the tensor's own dtype for data movement (mode 'bits').
    tol: per-element float64 tolerance (mode 'tol'); alt: a second accepted
    int64 value per element (integer Average/scaled), or None.
    """
    values: torch.Tensor
    dtype: torch.dtype
    mode: str
    tol: Optional[torch.Tensor] = None
    alt: Optional[torch.Tensor] = None

    @property
    def shape(self):
        return tuple(self.values.shape)

    def rows(self, start, count):
        """The expectation for rows [start, start + count) of dim 0."""
        cut = (lambda t: None if t is None else t.narrow(0, start, count))
        return replace(self, values=cut(self.values), tol=cut(self.tol), alt=cut(self.alt))

    def corrupted(self):
        """A deliberately wrong expectation (the suite's self-test): one
        element (index 17, or the last) off by one."""
        if self.values.numel() == 0:
            return self
        v = self.values.clone()
        flat = v.view(-1)
        i = min(17, flat.numel() - 1)
        if self.mode == "bits":
            flat[i] = ~flat[i] if flat.dtype == torch.bool else flat[i] + 1
        else:
            flat[i] += 1
        return replace(self, values=v, alt=None)


def movement(host):
    """Expectation of data movement: exactly these bits."""
    return Expected(values=host, dtype=host.dtype, mode="bits")


def _prescaled(x, pre):
    w = x.to(wide_dtype(x.dtype))
    if pre == 1.0:
        return w
    if x.dtype.is_floating_point:
        return w * pre
    return torch.trunc(w.to(torch.float64) * pre).to(torch.int64)


def reduce_expected(inputs, op, prescale=1.0, postscale=1.0):
    """Expected allreduce result of `inputs` (one host tensor per member of
    the process set, in set order, all of one dtype and shape)."""
    dtype = inputs[0].dtype
    n = len(inputs)
    terms = torch.stack([_prescaled(x, prescale) for x in inputs])
    if op in (SUM, AVERAGE):
        s = terms.sum(0)
    elif op == MIN:
        s = terms.min(0).values
    elif op == MAX:
        s = terms.max(0).values
    elif op == PRODUCT:
        s = terms.prod(0)
    else:
        raise ValueError(f"unknown reduce op {op!r}")
    factor = postscale * (1.0 / n if op == AVERAGE else 1.0)  # as upstream: post x (1/N)
    exact_factor = Fraction(postscale) / (n if op == AVERAGE else 1)
    if exact_factor == 1:
        mode = "exact" if (prescale == 1.0 or not dtype.is_floating_point) else "tol"
        tol = None
        if mode == "tol":
            tol = (n + 2) * EPS[dtype] * terms.abs().sum(0)
        return _checked(Expected(values=s, dtype=dtype, mode=mode, tol=tol))
    if dtype.is_floating_point:
        tol = (n + 2) * EPS[dtype] * abs(factor) * terms.abs().sum(0)
        return _checked(Expected(values=s * float(exact_factor), dtype=dtype, mode="tol", tol=tol))
    p, q = exact_factor.numerator, exact_factor.denominator
    exact = torch.div(s * p, q, rounding_mode="trunc")
    alt = torch.trunc(s.to(torch.float64) * factor).to(torch.int64)
    return _checked(Expected(values=exact, dtype=dtype, mode="exact", alt=alt))


class SuiteError(AssertionError):
    """The suite's own inputs broke its assumptions (a bug in the suite)."""


def _checked(exp):
    """Exact expectations must be representable in the dtype (the suite
    chooses inputs so that they are)."""
    if exp.mode == "exact" and exp.values.numel():
        back = exp.values.to(exp.dtype).to(exp.values.dtype)
        if not torch.equal(back, exp.values):
            bad = int((back != exp.values).nonzero()[0, 0]) if exp.values.dim() else 0
            raise SuiteError(f"conformance suite bug: expected value "
                             f"{exp.values.reshape(-1)[bad].item()} is not exactly representable "
                             f"in {exp.dtype}")
    return exp


# ---------------------------------------------------------------- comparison


def _fmt(v, dtype):
    if dtype == torch.bool:
        return str(bool(v))
    if dtype.is_floating_point:
        return repr(float(v))
    return str(int(v))


def _index(flat_i, shape):
    if len(shape) <= 1:
        return str(flat_i)
    idx, rest = [], flat_i
    for d in reversed(shape):
        idx.append(rest % d)
        rest //= d
    return f"{flat_i} {list(reversed(idx))}"


def compare(got, exp, device, what="output"):
    """None if `got` matches `exp` on `device`, else a one-line description
    of the first difference (dtype, shape, device, or values: index, got,
    expected and how many elements differ)."""
    if not isinstance(got, (torch.Tensor, PluginTensor)):
        return f"{what}: got {type(got).__name__}, expected a torch.Tensor"
    if got.dtype != exp.dtype:
        return f"{what}: dtype {str(got.dtype).replace('torch.', '')}, expected " \
               f"{str(exp.dtype).replace('torch.', '')}"
    if tuple(got.shape) != exp.shape:
        return f"{what}: shape {list(got.shape)}, expected {list(exp.shape)}"
    if got.device != device:
        return f"{what}: on device {got.device}, expected {device}"
    g = got.detach().cpu()
    if exp.mode == "bits":
        view = _BITS_VIEW.get(exp.dtype)
        gb = g.contiguous().view(view) if view else g
        eb = exp.values.contiguous().view(view) if view else exp.values
        bad = gb != eb
    elif exp.mode == "exact":
        gw = g.to(exp.values.dtype)
        bad = gw != exp.values
        if exp.alt is not None:
            bad &= gw != exp.alt
    else:
        diff = (g.to(torch.float64) - exp.values).abs()
        bad = ~(diff <= exp.tol)  # NaN fails too
    if not bool(bad.any()):
        return None
    flat_bad = bad.reshape(-1)
    i = int(flat_bad.nonzero()[0, 0])
    gv = g.reshape(-1)[i].item()
    ev = exp.values.reshape(-1)[i].item()
    if exp.mode == "bits" and exp.dtype.is_floating_point:
        bits = lambda t: f"0x{int(t.contiguous().view(_BITS_VIEW[exp.dtype]).reshape(-1)[i]) & ((1 << 8 * t.element_size()) - 1):0{2 * t.element_size()}x}"  # noqa: E731
        detail = f"got {_fmt(gv, exp.dtype)} ({bits(g)}), expected {_fmt(ev, exp.dtype)} " \
                 f"({bits(exp.values)})"
    else:
        detail = f"got {_fmt(gv, exp.dtype)}, expected {_fmt(ev, exp.dtype)}"
        if exp.mode == "tol":
            detail += f" +- {float(exp.tol.reshape(-1)[i]):.3g}"
        elif exp.alt is not None and int(exp.alt.reshape(-1)[i]) != int(ev):
            detail += f" (or {int(exp.alt.reshape(-1)[i])})"
    n_bad = int(flat_bad.sum())
    return f"{what}: values differ at index {_index(i, exp.shape)}: {detail} " \
           f"({n_bad} of {flat_bad.numel()} elements differ)"
