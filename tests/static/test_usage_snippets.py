"""Small programs for the spellings the usage fixtures do not show: keyword arguments, `while` counters,
`torch._dynamo.optimize`, keyword-only optimizer arguments. Each expects exactly the findings marked `# DLNNN` on
its lines (among the usage codes), and nothing else."""

from __future__ import annotations

import re
import textwrap

import pytest

from dynamo_lens.static import link, summarize

USAGE_CODES = frozenset(
    {"DL111", "DL112", "DL201", "DL202", "DL203", "DL206", "DL207", "DL208", "DL209", "DL210"}
    | {"DL401", "DL402", "DL403"}
)

SNIPPETS: dict[str, str] = {
    "keyword argument, dynamic=False": """
        import torch

        @torch.compile(dynamic=False)
        def f(x, n):
            return x * n

        for i in range(10):
            f(torch.ones(2), n=i * 2)  # DL203
    """,
    "dtypes bound to a local, keyword argument, aliases": """
        import torch

        @torch.compile
        def f(x):
            return x + 1

        def sweep(x):
            dtypes = [torch.half, torch.float, torch.float32]
            for dt in dtypes:
                f(x=x.to(dtype=dt))  # DL210
    """,
    "while counter": """
        import torch

        @torch.compile
        def f(x, scale):
            return x * scale

        step = 0
        while step < 10:
            f(torch.ones(2), f"s{step}")  # DL203
            step += 1
    """,
    "optimize with a lambda backend in a loop": """
        import torch

        def g(x):
            return x + 1

        for _ in range(10):
            torch._dynamo.optimize(lambda gm, ex: gm.forward)(g)(torch.ones(2))  # DL201
    """,
    "scheduler with optimizer= keyword": """
        import torch

        w = torch.nn.Parameter(torch.ones(2))
        opt = torch.optim.SGD([w], lr=0.1)
        sched = torch.optim.lr_scheduler.ExponentialLR(optimizer=opt, gamma=0.9)  # DL209
        step = torch.compile(opt.step)
        for _ in range(10):
            step()
            sched.step()
    """,
    "train(mode=False) through the wrapper": """
        import torch
        from torch import nn

        class Net(nn.Module):
            def __init__(self):
                super().__init__()
                self.drop = nn.Dropout(0.5)

            def forward(self, x):
                return self.drop(x)

        net = torch.compile(Net())
        net(torch.ones(2))
        net.train(mode=False)  # DL112
        net(torch.ones(2))
    """,
    "module bound in the loop, passed by keyword": """
        import torch
        from torch import nn

        @torch.compile
        def run(x, layer=None):
            return layer(x)

        for _ in range(10):
            head = nn.Linear(2, 2)
            run(torch.ones(2), layer=head)  # DL202
    """,
    "the eager module is not the compiled wrapper": """
        import torch
        from torch import nn

        model = nn.Linear(2, 2)
        compiled = torch.compile(model)
        for _ in range(10):
            compiled(torch.ones(2))
        with torch.no_grad():
            model(torch.ones(2))
        model.eval()
        torch._dynamo.mark_dynamic(torch.ones(2), 0)
    """,
    "torch.nn.Module.compile() on a torch.nn layer compiles nothing": """
        import torch
        from torch import nn

        layer = nn.Linear(2, 2)
        layer.compile()
        for i in range(10):
            torch._dynamo.reset()
            layer(torch.ones(2))
        with torch.no_grad():
            layer(torch.ones(2))
    """,
    "nothing compiled in the file": """
        import torch
        from torch.nn.modules.module import register_module_forward_hook

        for _ in range(3):
            torch._dynamo.reset()
        register_module_forward_hook(print)
    """,
}


@pytest.mark.parametrize("name", list(SNIPPETS))
def test_snippet(name: str) -> None:
    text = textwrap.dedent(SNIPPETS[name]).lstrip("\n")
    expected = {
        (mark, number) for number, line in enumerate(text.splitlines(), 1) for mark in re.findall(r"# (DL\d{3})", line)
    }
    found = {(f.code, f.span.line) for f in link([summarize("snippet.py", text)]) if f.code in USAGE_CODES}
    assert found == expected
