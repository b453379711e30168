"""DL209 · float-hyperparameter-varies

## What it does
Flags an optimizer whose `step` is compiled (`torch.compile(opt.step)`, or a compiled function that calls
`opt.step()`) while a learning-rate scheduler (`torch.optim.lr_scheduler.*`) or a write to
`opt.param_groups[...]["lr"]` changes the Python-float learning rate between steps.

## Why it matters
The optimizer's `step` reads `group["lr"]`; Dynamo guards the float by value
(`self.param_groups[0]['lr'] == 0.01`). Measured on torch 2.13 (`backend="eager"`, 12 steps, `Adam` with `StepLR`,
`SGD` with `LambdaLR`, and direct writes to `param_groups`): **2 compiles** of the step: one recompile, after which
the float becomes dynamic (`specialize_float=False`). With `lr=torch.tensor(0.01)` the step compiled once. The cost
on 2.13 is one extra compile, so the finding is `info`. Older releases specialised floats more eagerly; the PyTorch
tutorial on compiling the optimizer with an LR scheduler recommends a tensor learning rate for that reason.

## Example
```python
opt = torch.optim.Adam(model.parameters(), lr=0.01)
sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.9)

@torch.compile
def opt_step():
    opt.step()                      # DL209: guarded lr == 0.01, then dynamic

for x in loader:
    model(x).sum().backward()
    opt_step()
    sched.step()
```

## Use instead
Wrap the learning rate in a tensor: `torch.optim.Adam(model.parameters(), lr=torch.tensor(0.01))`.

## Known limitations
The optimizer (`name = torch.optim.X(...)`), the scheduler or the `param_groups` write, and the compiled step
(`torch.compile(opt.step)`, or a compiled function of the same file calling `opt.step()`) must all be in one file.
A learning rate built with `torch.tensor(...)` is not reported. `betas` and other float hyperparameters are not
followed.

## Fix safety
Wrapping the `lr=` value in `torch.tensor(...)` is offered as an unsafe fix: code that reads `group["lr"]` as a float
(logging, arithmetic on Python numbers) then sees a tensor.

## References
- PyTorch tutorial, "(beta) Running the compiled optimizer with an LR Scheduler":
  https://docs.pytorch.org/tutorials/recipes/compiling_optimizer_lr_scheduler.html
"""

from dynamo_lens.model import Severity
from dynamo_lens.rules import Rule

RULE = Rule(
    code="DL209",
    name="float-hyperparameter-varies",
    summary="A compiled optimizer step reads a Python-float learning rate that a scheduler changes",
    default_severity=Severity.INFO,
    source="static",
    docs_url="https://docs.pytorch.org/tutorials/recipes/compiling_optimizer_lr_scheduler.html",
    fix_title="Use a tensor learning rate",
)
