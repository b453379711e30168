"""DL207 · mark-dynamic-too-late

## What it does
Flags `torch._dynamo.mark_dynamic(t, dim)` (also `maybe_mark_dynamic`) on a tensor after a compiled callable has
already been called with that tensor, in the same function.

## Why it matters
`mark_dynamic` is read when Dynamo builds the guards of a new compile. Marking a tensor that a cache entry was
already compiled for does not make that entry dynamic: the entry was compiled with a static size, and the mark
itself fails its guard on the next call. Measured on torch 2.13 (`backend="eager"`): calling with `t`, then marking
`t` and calling again, compiled **twice** even though the shape never changed; marking before the first call compiled
once for 12 different sizes. The cost is one extra compile, so the finding is `info`; the mark also does nothing that
automatic dynamic shapes would not have done after the first size change.

## Example
```python
compiled = torch.compile(model)
x = next(batches)
compiled(x)
torch._dynamo.mark_dynamic(x, 0)    # DL207: too late, costs one more compile
compiled(x)
```

## Use instead
Mark the tensor before the first call that receives it:
```python
x = next(batches)
torch._dynamo.mark_dynamic(x, 0)
compiled(x)
```

## Known limitations
Only the order of statements in one function is considered: the call and the mark must use the same name, and a
call earlier in the same loop body counts only when it precedes the mark.

## Fix safety
Moving the `mark_dynamic` statement before the first call is offered when both are statements of the same block;
it is safe: marking earlier only removes the extra compile.

## References
- PyTorch, "Dynamic shapes": https://docs.pytorch.org/docs/stable/torch.compiler_dynamic_shapes.html
- `torch/_dynamo/decorators.py`: `mark_dynamic`
"""

from dynamo_lens.model import Severity
from dynamo_lens.rules import Rule

RULE = Rule(
    code="DL207",
    name="mark-dynamic-too-late",
    summary="A tensor is marked dynamic after a compiled callable already ran with it",
    default_severity=Severity.INFO,
    source="static",
    docs_url="https://docs.pytorch.org/docs/stable/torch.compiler_dynamic_shapes.html",
    fix_title="Mark the tensor dynamic before the first call",
)
