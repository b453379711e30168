"""DL302 · data-dependent-branch

## What it does
Flags an `if`, `while`, conditional expression (`a if cond else b`) or `and`/`or` operand inside compiled code whose
condition is a tensor: a comparison or a reduction of tensor values (`if y.sum() > 0:`,
`while t.abs().max() > 1:`, `if torch.isnan(x).any():`). The finding sits on the condition.

## Why it matters
Python control flow needs a Python `bool`, and a tensor's truth value is only known once the graph has run. Dynamo
stops the graph there (registry id GB0170 "Data-dependent branching", torch 2.13), runs the branch in Python and
resumes in a new frame, with its own guards and compiles. A data-dependent branch inside a loop makes Dynamo skip the
whole frame. Conditions on shapes, dtypes, `requires_grad`, `dim()` or `numel()` are known while tracing and are not
flagged, nor is `assert` on a tensor (Dynamo turns it into a runtime assertion without breaking).

## Example
```python
@torch.compile
def clip(y):
    if y.abs().max() > 100:        # DL302: GB0170
        y = y / 100
    return y
```

## Use instead
Make the code branchless, which usually costs nothing on well-behaved inputs:
```python
    y = torch.where(y.abs().max() > 100, y / 100, y)
```
or express the branch with `torch.cond(pred, true_fn, false_fn, (y,))`, which Dynamo captures as one graph.

## Known limitations
A condition is recognised as a tensor when it is built from tensor methods (`sum`, `any`, `max`, ...), `torch.*`
functions, arguments annotated `torch.Tensor`, or local names assigned from such expressions. A bare argument
(`if x:`) is not reported, since it could be a Python flag. Branches on `.item()` values are reported as DL301.

## Fix safety
No automatic fix: `torch.where` evaluates both branches, and `torch.cond` needs both branches to return tensors of
the same shape.

## References
- Graph-break registry entry GB0170: https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0170.html
- PyTorch, `torch.cond`: https://docs.pytorch.org/docs/stable/generated/torch.cond.html
"""

from dynamo_lens.model import Severity
from dynamo_lens.rules import Rule

RULE = Rule(
    code="DL302",
    name="data-dependent-branch",
    summary="A branch inside compiled code depends on a tensor's value: the graph breaks here",
    default_severity=Severity.WARNING,
    source="static",
    docs_url="https://meta-pytorch.github.io/compile-graph-break-site/gb/gb0170.html",
)
