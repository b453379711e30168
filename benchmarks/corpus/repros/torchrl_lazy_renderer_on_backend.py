"""Imitates MujocoEnv._render_pixels -> backend.render under EnvBase.compile(): the backend is a plain Python object
that creates its renderer lazily behind hasattr(). Variant "torch": the render itself is traceable tensor code.
Variant "native": the renderer call is opaque (graph break on every call), as with mujoco.Renderer."""

import torch
import torch._dynamo.utils as du


class Renderer:
    def __init__(self, h):
        self.height = h


class Backend:
    def __init__(self, native):
        self.native = native

    def render(self, x):
        if not hasattr(self, "_renderer") or self._renderer.height != 4:
            self._renderer = Renderer(4)
        if self.native:
            torch._dynamo.graph_break()  # stands in for mujoco.Renderer.update_scene/render
        return x * 2


class Env(torch.nn.Module):
    def __init__(self, native):
        super().__init__()
        self._backend = Backend(native)

    def _step_and_maybe_reset(self, x):
        return self._backend.render(x + 1)


for native in (False, True):
    torch._dynamo.reset()
    du.counters.clear()
    env = Env(native)
    compiled = torch.compile(env._step_and_maybe_reset, backend="eager")
    x = torch.ones(3)
    for _ in range(6):
        compiled(x)
    print(
        f"native={native}: frames ok={du.counters['frames']['ok']}"
        f" unique_graphs={du.counters['stats']['unique_graphs']}"
        f" graph_breaks={sum(du.counters['graph_break'].values())}"
    )
