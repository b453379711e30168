"""DL506 · guard-checks-costly

## What it does
Reported after a run with `dynamo-lens run --guard-cost` (or "Run Current File and Measure Guard Cost" in the editor)
for a cache entry whose guard checks take at least 10 % of each call that uses it (and at least 5 µs, over at least
10 calls, with at least 50 guards at no more than 250 ns each, so that noise is not reported): at the user's line
that asked for the compile, with the time per call, the share, the number of guards and how many calls were
measured.

## Why it matters
Before every call of compiled code Dynamo checks the guards of the frame's cache entries: tensor metadata, module
types and attributes, globals. A model with hundreds of modules has thousands of guards; each takes tens of
nanoseconds, so the checks can take a real part of a small call (a decoding step, a small batch). Measured on
torch 2.13 with `torch.profiler`'s `TorchDynamo Cache Lookup` event, the way PyTorch documents it: 16 blocks of
`Linear` and `LayerNorm`, 651 guards, 14-16 µs per call; the weights of 64 `nn.Linear` experts stacked in one call,
594 guards, 12-14 µs of a 45 µs call. Dynamo's "guard latency" logged at compile time is one cold run and overstates
the steady state several times; this finding uses only calls that hit the entry, medians over them.

## Example
```python
model = torch.compile(Decoder(layers=64))   # DL506 (after a --guard-cost run): guard checks 20 µs per call (14 %)
for token in range(max_new_tokens):
    logits = model(next_token)
```

## Use instead
Drop guards you know cannot change, with the documented `guard_filter_fn` option (torch 2.8 and later):
`torch.compile(model, options={"guard_filter_fn": torch.compiler.skip_guard_on_inbuilt_nn_modules_unsafe})` drops
the guards on the attributes of `torch.nn`'s own modules (measured: 594 guards → 82, 13.8 µs → 2.1 µs per call for
the 64 experts);
`skip_guard_on_all_nn_modules_unsafe` also drops those of your own modules, `keep_tensor_guards_unsafe` keeps only
the tensor guards. "Re-run to verify" shows the guard checks before and after.

## Known limitations
Measured under `torch.profiler`, which slows the operators of the call more than the guard checks, so the share is
if anything too small. The profiler runs in windows: the 200 compiled calls after each compile, in the thread that
made them, so calls in other threads and entries not called in a window have no figure; a window is left out while
the program runs a profiler of its own. Needs torch 2.8 or later (the windows open in the guard-complete hook). A run
killed before it ends has no figures. Kineto prints a line or two of its own on standard error.

## Fix safety
The fix is unsafe: with the guards gone, a later change of a built-in module's attribute does not recompile and the
compiled code keeps computing as before. Measured: after `model.eval()` a `Dropout` kept dropping, and the output
differed from eager. Apply it only where such modules never change after the first call.

## References
- PyTorch, "Reducing Guard Overhead": https://docs.pytorch.org/docs/main/user_guide/torch_compiler/compile/programming_model.reducing_guard_overhead.html
- PyTorch, `torch.compiler.skip_guard_on_inbuilt_nn_modules_unsafe`: https://docs.pytorch.org/docs/stable/generated/torch.compiler.skip_guard_on_inbuilt_nn_modules_unsafe.html
- `torch/compiler/__init__.py`: `skip_guard_on_inbuilt_nn_modules_unsafe`, `skip_guard_on_all_nn_modules_unsafe`
"""

from __future__ import annotations

from dynamo_lens.codes import Rule
from dynamo_lens.model import Severity

RULE = Rule(
    code="DL506",
    name="guard-checks-costly",
    summary="Checking a compiled entry's guards takes a real part of each call",
    default_severity=Severity.INFO,
    source="runtime",
    docs_url="https://docs.pytorch.org/docs/main/user_guide/torch_compiler/compile/programming_model.reducing_guard_overhead.html",
)
