"""The usage checks (DL107, DL111, DL112, DL201-DL203, DL206-DL211, DL401-DL403) agree with what torch 2.13 really does.

Every fixture of these codes runs under real ``torch.compile(..., backend="eager")`` (``usage_probe.py``) and the
static findings are checked against the measurement:

* torch: the busiest frame compiles exactly ``compiles`` times, the recompile limit is hit or not, and for hook
  fixtures the hook counter of the compiled run relates to the eager run as claimed (``SILENT``: the compiled run
  never called the hook, ``DIFFERS``: another count, ``SAME``: the same count);
* static: a fixture with marks gets the code exactly on its marked lines, at ``warning`` when torch's cost is
  unbounded (the limit is hit, every iteration compiles, or a hook is silently skipped or miscounted) and at ``info``
  when it is bounded (one extra compile per value or mode); a fixture without marks gets no finding of the code.

Hooks around ``torch.compile(nn.Sequential(...))`` leave state behind in a process that ``torch._dynamo.reset()``
does not clear (measured: after a script with a global hook, or one hooking ``model[0]`` of a compiled Sequential, a
later script's hook on ``model[0]`` of another compiled Sequential stopped firing), so the fixtures that are
sensitive to it (``ISOLATED``) each run in their own process; the others share one.
"""

from __future__ import annotations

import enum
import json
import re
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from oracle import FLOAT_ANY_POLICY, INT_AS_INPUT, ORACLE_PYTHON, Differs, earliest_before, oracle_torch
from test_guard_filter import CASES as GUARD_FILTER_CASES

from dynamo_lens.model import Finding, Severity
from dynamo_lens.static import link, summarize
from dynamo_lens.torch_facts import (
    BREAK_BEFORE_TENSOR_WORK_SKIPS_SINCE,
    FLOAT_DYNAMIC_SINCE,
    FLOAT_POLICY_SINCE,
    MAYBE_MARK_GUARDED_SINCE,
    PINNED,
    RECOMPILE_LIMIT_NAME_SINCE,
    TORCH_NN_METHOD_COMPILE_SINCE,
    UNSPEC_INT_FLAG_SINCE,
    Release,
    limit_setting,
)

pytestmark = [pytest.mark.oracle, pytest.mark.usefixtures("describe_oracle_torch")]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "static"
PROBE = Path(__file__).with_name("usage_probe.py")
CODES = (
    "DL107",
    "DL111",
    "DL112",
    "DL201",
    "DL202",
    "DL203",
    "DL206",
    "DL207",
    "DL208",
    "DL209",
    "DL210",
    "DL211",
    "DL401",
    "DL402",
    "DL403",
)
LIMIT = 8  # torch._dynamo.config.recompile_limit on 2.13
ISOLATED = frozenset({"DL402_global_forward_hook.py", "DL402_cross_file/train.py", "DL402_ok_per_module_hook.py"})


class Hooks(enum.Enum):
    NONE = "none"  # no hook counter in the fixture
    SILENT = "silent"  # compiled run: 0 calls, eager run: some
    DIFFERS = "differs"  # compiled and eager counts differ
    SAME = "same"  # compiled and eager counts are equal


@dataclass(frozen=True, slots=True)
class Case:
    fixture: str
    compiles: int
    limit_hit: bool = False
    hooks: Hooks = Hooks.NONE
    limit: int = LIMIT
    """The recompile limit the fixture runs under."""
    count_unknown: bool = False
    """How many entries the code makes is not known to the scan (one per distinct parameter shape of a model): the
    finding is ``info`` and says what happens past the limit, even where the fixture's count hits it."""
    since: Differs | None = None
    """What torch does from a later release on, where it differs (``torch_facts`` keys the claim by release)."""
    before: tuple[Differs, ...] = ()
    """What older releases do instead (the earliest bound that applies wins)."""
    needs: Release | None = None
    """The release that added what the fixture uses (a setting): older ones cannot run it."""

    @property
    def code(self) -> str:
        return self.fixture[:5]

    @property
    def script(self) -> Path:
        return FIXTURES / self.fixture

    @property
    def root(self) -> Path:
        return self.script if self.script.parent == FIXTURES else self.script.parent

    @property
    def unbounded(self) -> bool:
        return self.limit_hit or self.compiles > self.limit or self.hooks in (Hooks.SILENT, Hooks.DIFFERS)

    def __str__(self) -> str:
        return self.fixture

    def changed_on(self, release: Release | None) -> Differs | None:
        """What differs on ``release`` (the oracle's torch), or None when the case holds as written; skips the test
        where the release cannot run the fixture."""
        older = earliest_before(release, self.before, self.needs)
        if self.since is not None and (release or PINNED) >= self.since.release:
            return self.since
        return older


CASES = (
    # DL107: instances compiled one by one share a forward: one entry per value of a per-instance scalar it reads
    Case("DL107_layer_index_regional.py", LIMIT, limit_hit=True, before=(INT_AS_INPUT,)),
    # twelve known values: the fix raises the limit to 12
    Case("DL107_twelve_layers.py", LIMIT, limit_hit=True, before=(INT_AS_INPUT,)),
    # the list a helper appends the blocks to
    Case("DL107_layers_appended_by_helper.py", LIMIT, limit_hit=True, before=(INT_AS_INPUT,)),
    # under that limit: one entry per layer, bounded
    Case("DL107_layer_index_raised_limit.py", 12, limit=12, before=(INT_AS_INPUT,), needs=RECOMPILE_LIMIT_NAME_SINCE),
    Case("DL107_four_layers.py", 4, before=(INT_AS_INPUT,)),
    # a float per layer: dynamic after one recompile
    Case("DL107_float_scale_per_layer.py", 2, before=FLOAT_ANY_POLICY[:1]),
    # dynamic=False keeps it static
    Case("DL107_float_scale_dynamic_false.py", LIMIT, limit_hit=True, before=FLOAT_ANY_POLICY),
    # so does the project's setting
    Case("DL107_float_scale_automatic_dynamic_off.py", LIMIT, limit_hit=True, before=FLOAT_ANY_POLICY),
    Case("DL107_flag_per_stack.py", 2),
    Case("DL107_flag_through_helper.py", 2),  # through a helper the layer loop calls, and one annotated `-> bool`
    Case("DL107_block_built_by_helper.py", 2),  # the helper builds the block that holds the instance too
    Case("DL107_repeated_blocks_by_name.py", 2),  # blocks picked by class name (diffusers' compile_repeated_blocks)
    Case("DL107_ok_repeated_blocks_other_class.py", 1),  # the flag is in a class the name filter does not pick
    Case("DL107_flag_from_config_field.py", 2),  # `config.moe is not None`, the config built per layer in a loop
    Case("DL107_choice_through_loop_local.py", 2),  # `attention = ... if is_full else None`, then the constructor
    Case("DL107_window_in_submodule.py", 2),  # a window or None per layer, read by the layers' attention
    Case("DL107_layer_width_per_block.py", LIMIT, limit_hit=True),  # parameter shapes per block stay static
    Case("DL107_layer_width_four_stages.py", 4),  # four widths: one entry each, bounded
    Case("DL107_ok_layer_width_whole_model.py", 1),  # inlined into one frame: one graph for every width
    # allow_unspec_int_on_nn_module: dynamic after one recompile
    Case("DL107_layer_index_unspec_flag.py", 2, needs=UNSPEC_INT_FLAG_SINCE),
    Case("DL107_ok_whole_model.py", 1),  # inlined into one frame: the values are constants of one graph
    Case("DL107_ok_index_unread.py", 1),  # not read by the compiled code: not guarded
    Case("DL107_ok_same_value.py", 1),  # built in a loop, but every instance gets the same value
    Case("DL107_ok_roles_within_layer.py", 1),  # values differ inside each layer, the same in every layer
    # DL111: int/str attributes compile per value (limit), floats and bools once more
    Case("DL111_int_attr_loop.py", LIMIT, limit_hit=True, before=(INT_AS_INPUT,)),
    Case("DL111_str_mode_via_wrapper.py", 3),  # three modes → three entries: unbounded in the number of values
    Case("DL111_subclass_helper.py", LIMIT, limit_hit=True),
    Case("DL111_cross_file/train.py", 2, before=FLOAT_ANY_POLICY[:1]),
    # allow_unspec_int_on_nn_module: dynamic after one recompile
    Case("DL111_int_attr_unspec_flag.py", 2, needs=UNSPEC_INT_FLAG_SINCE),
    # dynamic=False: a float per value
    Case("DL111_float_attr_dynamic_false.py", LIMIT, limit_hit=True, before=FLOAT_ANY_POLICY),
    Case(  # dynamic=True: symbolic from the start (not yet on 2.6 and 2.7; floats were static on 2.5)
        "DL111_ok_float_attr_dynamic_true.py",
        1,
        before=(
            Differs(FLOAT_DYNAMIC_SINCE, LIMIT, limit_hit=True, lines=frozenset({22})),
            Differs(FLOAT_POLICY_SINCE, 2, lines=frozenset({22})),
        ),
    ),
    Case("DL111_float_attr_specialized.py", LIMIT, limit_hit=True),  # specialize_float = True beats dynamic=True
    # through an object that holds the compiled model (`self.model.x = ...` in a trainer's method)
    Case("DL111_trainer_holds_model.py", LIMIT, limit_hit=True, before=(INT_AS_INPUT,)),
    Case("DL111_trainer_switches_flag.py", 2),
    Case("DL111_ok_trainer_configures_first.py", 1),
    # a method of a submodule changes what the compiled forward reads through it (`self.rope.scale`)
    Case(
        "DL111_setter_method_under_schedule.py",
        3,
        before=(Differs(FLOAT_DYNAMIC_SINCE, 3), Differs(FLOAT_POLICY_SINCE, 2)),
    ),
    Case("DL111_setter_method_every_step.py", LIMIT, limit_hit=True, before=(INT_AS_INPUT,)),
    # ... read through a local the callee takes out of a dataclass argument (`yarn = args.yarn`)
    Case(
        "DL111_setter_read_through_dataclass_argument.py",
        3,
        before=(Differs(FLOAT_DYNAMIC_SINCE, 3), Differs(FLOAT_POLICY_SINCE, 2)),
    ),
    Case(
        "DL111_setter_read_through_argument_chain.py",
        3,
        before=(Differs(FLOAT_DYNAMIC_SINCE, 3), Differs(FLOAT_POLICY_SINCE, 2)),
    ),
    Case("DL111_ok_fresh_object_read_through_local.py", 1),
    Case("DL111_ok_comprehension_variable_shadows_local.py", 1),
    # the same attribute assigned directly (`model.clock.ticks = step`)
    Case("DL111_submodule_attribute_every_step.py", LIMIT, limit_hit=True, before=(INT_AS_INPUT,)),
    Case("DL111_submodule_attribute_read_through_argument.py", LIMIT, limit_hit=True, before=(INT_AS_INPUT,)),
    Case("DL111_ok_submodule_attribute_set_first.py", 1),
    # the compiled module's own method
    Case("DL111_own_setter_method.py", LIMIT, limit_hit=True, before=(INT_AS_INPUT,)),
    # the argument the setter stores
    Case("DL111_setter_argument_every_step.py", LIMIT, limit_hit=True, before=(INT_AS_INPUT,)),
    Case("DL111_ok_setter_same_constant.py", 1),
    Case("DL111_ok_setter_before_first_call.py", 1),
    Case("DL111_ok_unread_attr.py", 1),
    Case("DL111_ok_set_before_compile.py", 1),
    Case("DL111_ok_buffer_fill.py", 1),
    Case("DL111_ok_uncompiled.py", 1),
    # DL112: one entry per mode when a layer reads `training`
    Case("DL112_epoch_loop.py", 2),
    Case("DL112_train_false_wrapper.py", 2),
    Case("DL112_cross_file/main.py", 2),
    Case("DL112_evaluate_helper_no_grad.py", 2),  # eval and no_grad switch together: one entry per pair
    Case("DL112_batchnorm_subclass.py", 2),  # a workspace subclass of nn.BatchNorm2d reads `training` too
    Case("DL112_ok_eval_before_compile.py", 1),
    Case("DL112_ok_train_only.py", 1),
    Case("DL112_ok_restored_around_uncompiled_work.py", 1),
    Case("DL112_ok_uncompiled.py", 1),
    Case("DL112_ok_no_mode_layers.py", 1),
    Case("DL112_ok_eval_every_epoch.py", 1),
    Case("DL112_trainer_built_to_compile.py", 2),  # compiled in __init__ because `compile_options` is passed
    Case("DL112_ok_trainer_built_without_compile.py", 1),  # the switched trainer leaves it at None: never compiled
    # DL201: a fresh backend callable fails BACKEND_MATCH; the same backend is cached
    Case("DL201_lambda_backend.py", LIMIT, limit_hit=True),
    Case("DL201_lambda_backend_raised_limit.py", 12, limit_hit=True, limit=12),
    Case("DL201_ok_compile_on_first_step.py", 1),  # compiled on the first iteration only
    Case("DL201_partial_backend_helper.py", LIMIT, limit_hit=True),
    Case("DL201_backend_factory_in_loop.py", LIMIT, limit_hit=True),
    Case("DL201_same_backend_alias.py", 1),
    Case("DL201_ok_hoisted.py", 1),
    Case("DL201_ok_builder_called_once.py", 1),
    Case("DL201_ok_compile_in_main.py", 1),
    # DL202: fresh modules do not recompile on 2.13, unless a per-instance int is read
    Case("DL202_fresh_block_per_call.py", 1),
    Case("DL202_ok_fresh_parameter.py", 1),  # nn.Parameter(...) is a tensor: no module, no finding
    Case("DL202_fresh_layer_named.py", 1),
    Case("DL202_cross_file/main.py", LIMIT, limit_hit=True),
    Case("DL202_ok_module_built_once.py", 1),
    Case("DL202_ok_uncompiled_fn.py", 0),
    Case("DL202_ok_tensor_args.py", 1),
    # DL203: ints and floats become dynamic after one recompile, except with dynamic=False, range() bounds, strings
    # what varies from one iteration to the next: a bool from a step counter, a counter advanced with `+=` in a
    # `for` loop, a loop over a named list of values; a tensor advanced in place does not
    Case("DL203_bool_from_counter.py", 2),
    Case("DL203_counter_advanced_in_for.py", LIMIT, limit_hit=True),
    Case("DL203_literal_list_loop.py", 2),
    Case("DL203_count_read_from_tensor.py", 2),  # `n = labels.ne(-1).sum().item()` each step: dynamic after one
    Case("DL203_value_read_from_tensor_dynamic_false.py", LIMIT, limit_hit=True),  # `.item()` under dynamic=False
    Case("DL203_ok_tensor_advanced_in_place.py", 1),
    Case("DL203_int_arg_dynamic_false.py", LIMIT, limit_hit=True),
    Case("DL203_int_arg_automatic_dynamic_off.py", LIMIT, limit_hit=True),  # the project's setting keeps it static
    Case("DL203_float_arg_specialized.py", LIMIT, limit_hit=True),  # specialize_float = True
    Case("DL203_float_arg_specialized_despite_dynamic.py", LIMIT, limit_hit=True),  # dynamic=True does not help
    Case("DL203_int_arg_specialized.py", LIMIT, limit_hit=True),  # specialize_int = True
    Case("DL203_int_arg_specialized_despite_dynamic.py", LIMIT, limit_hit=True),  # nor for an int
    Case("DL203_ok_int_arg_dynamic_by_default.py", 1),  # assume_static_by_default = False: symbolic at once
    Case("DL203_ok_sweep_under_force_eager.py", 1),  # the sweep runs eagerly under set_stance("force_eager")
    Case("DL203_range_bound.py", LIMIT, limit_hit=True),
    Case("DL203_str_arg.py", LIMIT, limit_hit=True),
    Case("DL203_module_float_info.py", 2),
    Case("DL203_module_range_steps.py", LIMIT, limit_hit=True),
    Case("DL203_ok_dynamic_true.py", 1),
    Case("DL203_ok_constant_arg.py", 1),
    Case("DL203_ok_tensor_batches.py", 1),
    Case("DL203_ok_unused_argument.py", 1),
    Case("DL203_literal_differs_between_calls.py", 2),  # the reference pass's default True, then False in the loop
    Case("DL203_literal_ints_differ_dynamic_false.py", 3),  # three int literals under dynamic=False
    Case("DL203_ok_literal_same_or_unread.py", 1),  # the same value, or a parameter the function never reads
    Case(  # no graph: the frame is skipped, nothing is guarded; before 2.13 the string was guarded (a miss there)
        "DL203_ok_literal_without_tensor_work.py",
        1,
        before=(Differs(BREAK_BEFORE_TENSOR_WORK_SKIPS_SINCE, 2, lines=frozenset()),),
    ),
    Case("DL203_optional_mask_left_at_default.py", 2),  # a tensor at one call, None at the others: `is None` guarded
    Case("DL203_ok_optional_tensor_unread.py", 1),
    Case("DL203_dict_key_sets_differ.py", 3),  # an iterated dict input: each key set is an entry
    Case("DL203_dict_keys_in_another_order.py", 2),  # ... and each order
    Case("DL203_ok_dict_indexed_by_key.py", 1),  # read by key only: other keys and order unguarded
    # DL206: a reset per step compiles every step (and no recompile is ever logged)
    Case("DL206_reset_per_step.py", 12),
    Case("DL206_compiler_reset_alias.py", 12),
    Case("DL206_reset_in_helper.py", 12),
    Case("DL206_reset_in_method.py", 12),
    Case("DL206_ok_reset_once.py", 2),
    Case("DL206_ok_per_experiment.py", 2),
    Case("DL206_ok_other_reset.py", 1),
    Case("DL206_ok_benchmark_helper.py", 4),  # one intended compile per benchmark call
    Case("DL206_ok_experiment_helper.py", 2),  # one compile per experiment (the same wrapper frame, twice)
    Case("DL206_reset_and_compile_in_loop.py", 12),  # the same model compiled from scratch on every iteration
    Case("DL206_reset_then_compile_inline.py", 12),  # torch.compile(f)(x) and model.compile(), each iteration
    Case("DL206_ok_reset_and_compile_each_model.py", 2),  # one compile per model (the same forward, twice)
    # DL207: marking after the first call costs one compile
    Case("DL207_mark_after_warmup.py", 2),
    Case("DL207_maybe_mark_alias.py", 2, before=(Differs(MAYBE_MARK_GUARDED_SINCE, 1, lines=frozenset()),)),
    Case("DL207_in_loop_after_call.py", 2),
    Case("DL207_assigned_output.py", 2),
    Case("DL207_ok_mark_before.py", 1),
    Case("DL207_ok_other_callable.py", 1),
    Case("DL207_ok_other_tensor.py", 1),
    # DL208: one entry per grad mode
    Case("DL208_ok_inside_autograd_function.py", 1),  # autograd runs Function.forward with grad disabled
    Case("DL208_eval_no_grad.py", 2),
    # `model.forward = torch.compile(model.forward)`: `self.forward(x)` in another method of the model runs it too
    Case("DL208_forward_replaced_by_compiled.py", 2),
    Case("DL208_ok_forward_replaced_same_mode.py", 1),
    Case("DL208_dispatch_table.py", 2),  # the compiled call made through a function picked from a table
    Case("DL208_inference_mode_alias.py", 2),
    Case("DL208_decorated_evaluate.py", 2),
    Case("DL208_set_grad_enabled_loop.py", 2),
    Case("DL208_task_wrapper.py", 2),
    Case("DL208_eval_context_method.py", 2),  # a @contextmanager method puts no_grad on an ExitStack
    Case("DL208_ok_context_method_yields_in_branch.py", 1),  # no_grad on one arm only, flag left False
    Case("DL208_registry_of_compiled_modules.py", 2),  # dict.get returns the compiled module; keys() runs none
    Case("DL208_ok_two_objects_of_one_helper.py", 1),  # one helper, two compiled objects, one mode each
    Case("DL208_ok_factory_method_builds_each_module.py", 1),  # config.build() makes a new module per call
    Case("DL208_ok_helper_compiles_teacher_and_student.py", 1),  # two classes: one forward, one mode each
    Case("DL208_helper_compiles_two_modules_of_one_class.py", 2),  # one class: its forward sees both modes
    Case("DL208_finding_on_the_variable_in_both_modes.py", 2),  # shown where one variable runs in both modes
    Case("DL208_ok_dict_key_picks_eager_model.py", 1),  # runs["eager"] is the uncompiled model
    Case("DL208_models_unpacked_into_attributes.py", 2),  # self.policy, self.reference = self._set_up()
    Case("DL208_ok_eval_under_force_eager.py", 1),  # set_stance("force_eager") runs the evaluation eagerly
    Case("DL208_rebound_training_script.py", 4),  # train, eval + no_grad, then the float temperature: bounded
    Case("DL208_ok_always_no_grad.py", 1),
    Case("DL208_ok_uncompiled_eval.py", 1),
    Case("DL208_ok_enable_grad_same.py", 1),
    # DL211: autocast on or off is part of GLOBAL_STATE: one entry per state
    Case("DL211_benchmark_without_autocast.py", 2),
    Case("DL211_decorated_scoring.py", 2),
    Case("DL211_trainer_amp_step.py", 2),
    Case("DL211_ok_autocast_everywhere.py", 1),
    Case("DL211_ok_autocast_flag.py", 1),
    Case("DL211_ok_autocast_disabled.py", 1),
    Case("DL211_ok_grad_mode_differs_too.py", 2),  # one extra entry, DL208's
    Case("DL208_ok_no_grad_through_helpers.py", 1),
    Case("DL208_ok_closure_benchmarked_under_inference_mode.py", 1),  # the closure is only called under the mode
    # torch.nn frames are skipped on 2.13: nothing compiles; 2.14 compiles them, and no_grad adds an entry, which the
    # scan does not see yet (the grad-mode check follows calls of the compiled object, here the receiver): a miss
    Case(
        "DL208_ok_torch_nn_compile_in_place.py", 0, since=Differs(TORCH_NN_METHOD_COMPILE_SINCE, 2, lines=frozenset())
    ),
    Case("DL208_requires_grad_flipped_in_loop.py", 2),  # each flip: one entry per requires_grad value
    Case("DL208_ok_requires_grad_set_once.py", 1),
    Case("DL208_step_published_by_setup.py", 2),  # `global step; step = torch.compile(step)`: its readers call it
    Case("DL208_ok_published_step_outside_program.py", 1),  # evaluate() is not run by the compiling train()
    # DL209: a scheduled float lr recompiles the optimizer step once
    Case("DL209_steplr_compiled_step.py", 2),
    Case("DL209_compile_opt_step_direct.py", 2),
    Case("DL209_param_groups_write.py", 2),
    Case("DL209_ok_tensor_lr.py", 1),
    Case("DL209_ok_constant_lr.py", 1),
    Case("DL209_ok_uncompiled_step.py", 1),
    Case("DL209_betas_cycled.py", 2),  # OneCycleLR cycles Adam's betas[0]: guarded, then dynamic
    Case("DL209_ok_momentum_not_cycled.py", 1),
    # DL210: dtypes are never dynamic (one compile per dtype, the limit past eight), nor sizes under dynamic=False
    Case("DL210_parameter_shape_follows_counter.py", LIMIT, limit_hit=True),  # parameter shapes stay static
    Case("DL210_ok_parameter_shape_static_off.py", 2),  # force_parameter_static_shapes = False: dynamic
    # one call per parameter of a model: one entry per distinct parameter shape where shapes stay static
    Case("DL210_parameter_loop_gradient_static.py", LIMIT, limit_hit=True, count_unknown=True),
    Case("DL210_optimizer_step_per_parameter.py", LIMIT, limit_hit=True, count_unknown=True),
    Case("DL210_parameter_loop_parameter_itself.py", LIMIT, limit_hit=True, count_unknown=True),
    Case("DL210_parameter_loop_raised_limit.py", 10, limit=16),
    Case("DL210_ok_parameter_loop_gradient_default.py", 3),
    Case("DL210_dtype_loop.py", 4),
    Case("DL210_dtype_loop_past_limit.py", LIMIT, limit_hit=True),
    Case("DL210_dtype_loop_raised_limit.py", 10, limit=10),  # within the project's limit: bounded
    # requires_grad of the compiled module's parameters is in their TENSOR_MATCH guard
    Case("DL210_layers_frozen_one_per_epoch.py", LIMIT, limit_hit=True),
    Case("DL210_parameters_frozen_once.py", 2),
    Case("DL210_first_block_toggled.py", 2),
    Case("DL210_ok_frozen_before_first_call.py", 1),
    Case("DL210_dtype_argument.py", 3),
    # an inference tensor lacks the autograd dispatch key the tensor guard checks: a second entry, then reused
    Case("DL210_inference_tensor_mixed.py", 2),
    Case("DL210_ok_inference_tensor_cloned.py", 1),
    Case("DL210_ok_inference_tensors_only.py", 1),
    # a list input's length is guarded and never dynamic, even under dynamic=True
    Case("DL210_list_grows_past_limit.py", LIMIT, limit_hit=True),
    Case("DL210_list_grows_within_limit.py", 3),
    Case("DL210_list_length_follows_counter.py", LIMIT, limit_hit=True),
    # a compiled module's output fed back with grad enabled requires grad; the first input does not
    Case("DL210_output_fed_back_with_grad.py", 2),
    Case("DL210_ok_output_fed_back_detached.py", 1),
    Case("DL210_ok_output_fed_back_no_grad.py", 1),
    Case("DL210_ok_list_rebuilt_each_iteration.py", 1),
    Case("DL210_ok_dtype_loop_unrelated_argument.py", 1),
    Case("DL210_ok_single_dtype.py", 1),
    Case("DL210_ok_dtype_loop_uncompiled.py", 1),
    Case("DL210_shape_follows_counter_static.py", LIMIT, limit_hit=True),
    Case("DL210_shape_follows_counter_automatic_dynamic_off.py", LIMIT, limit_hit=True),  # the project's setting
    Case("DL210_ok_shape_follows_counter_default.py", 2),  # automatic dynamic after the second size
    # DL401: hooks added after the compiled code ran are silently skipped
    Case("DL401_submodule_hook_after_call.py", 1, hooks=Hooks.SILENT),
    Case("DL401_hook_loop_modules.py", 1, hooks=Hooks.DIFFERS),  # the root's own hook still fires
    Case("DL401_module_in_compiled_fn.py", 1, hooks=Hooks.SILENT),
    Case("DL401_backward_hook_in_loop.py", 1, hooks=Hooks.SILENT),
    Case("DL401_top_level_torch_nn.py", 1, hooks=Hooks.SILENT),
    Case("DL401_hook_comprehension.py", 1, hooks=Hooks.SILENT),
    Case("DL401_hook_added_by_helper.py", 1, hooks=Hooks.SILENT),
    Case("DL401_helper_in_another_file/train.py", 1, hooks=Hooks.SILENT),  # the helper is imported
    Case("DL401_hook_guards_on.py", 2, hooks=Hooks.SAME),  # skip_nnmodule_hook_guards = False: one recompile
    Case("DL401_ok_hook_helper_before_first_call.py", 1, hooks=Hooks.SAME),
    Case("DL401_ok_before_first_call.py", 1, hooks=Hooks.SAME),
    Case("DL401_ok_top_level_module.py", 1, hooks=Hooks.SAME),
    Case("DL401_ok_uncompiled.py", 1, hooks=Hooks.SAME),
    # DL402: global hooks fire differently around torch.compile(module) or when installed after compiled code ran
    Case("DL402_global_forward_hook.py", 1, hooks=Hooks.DIFFERS),
    Case("DL402_registered_after_run.py", 1, hooks=Hooks.SILENT),
    Case("DL402_cross_file/train.py", 1, hooks=Hooks.DIFFERS),
    Case("DL402_ok_hook_before_compiled_function.py", 1, hooks=Hooks.SAME),
    Case("DL402_ok_per_module_hook.py", 1, hooks=Hooks.SAME),
    Case("DL402_ok_no_compile.py", 0, hooks=Hooks.SAME),
    Case("DL402_ok_unrelated_program/tracer.py", 0, hooks=Hooks.SAME),
    Case("DL402_ok_other_library.py", 1),
    # DL403: a replaced forward is picked up with one recompile (results stay right)
    Case("DL403_forward_patched_after_call.py", 2),
    Case("DL403_submodule_methodtype.py", 2),
    Case("DL403_module_in_compiled_fn.py", 2),
    Case("DL403_ok_patched_before_compile.py", 1),
    Case("DL403_ok_load_state_dict_assign.py", 1),
    Case("DL403_ok_uncompiled.py", 1),
)


def start_probe(scripts: list[Path]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [ORACLE_PYTHON, str(PROBE), *map(str, scripts)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def finish_probe(process: subprocess.Popen[str]) -> dict[str, Any]:
    stdout, stderr = process.communicate(timeout=600)
    assert process.returncode == 0, stderr[-4000:]
    results: dict[str, Any] = json.loads(stdout)
    return results


@pytest.fixture(scope="module")
def measured() -> dict[str, Any]:
    """One process for the shared fixtures and one per isolated fixture, all started at once."""
    processes = [start_probe([case.script for case in CASES if case.fixture not in ISOLATED])]
    processes += [start_probe([case.script]) for case in CASES if case.fixture in ISOLATED]
    results: dict[str, Any] = {}
    for process in processes:
        results.update(finish_probe(process))
    return {case.fixture: results[str(case.script)] for case in CASES}


def static_findings(case: Case) -> list[Finding]:
    files = [case.root] if case.root.is_file() else sorted(case.root.glob("*.py"))
    base = case.root.parent if case.root.is_file() else case.root
    summaries = [summarize(f.relative_to(base).as_posix(), f.read_text(encoding="utf-8")) for f in files]
    return [f for f in link(summaries) if f.code == case.code]


def marked_lines(case: Case) -> set[tuple[str, int]]:
    files = [case.root] if case.root.is_file() else sorted(case.root.glob("*.py"))
    base = case.root.parent if case.root.is_file() else case.root
    mark = re.compile(rf"\S.*#.*\b{case.code}\b")
    return {
        (f.relative_to(base).as_posix(), number)
        for f in files
        for number, text in enumerate(f.read_text(encoding="utf-8").splitlines(), start=1)
        if mark.search(text)
    }


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=str)
def test_static_finding_matches_torch(case: Case, measured: dict[str, Any]) -> None:
    changed = case.changed_on(oracle_torch().release)
    seen = measured[case.fixture]
    assert seen["error"] is None, seen["error"]
    if changed is not None:
        case = replace(case, compiles=changed.compiles, limit_hit=changed.limit_hit, since=None, before=())
    assert max(seen["compiles"].values(), default=0) == case.compiles, seen["compiles"]
    assert bool(seen["limit_hits"]) == case.limit_hit, seen["limit_hits"]
    hits, eager = seen["hits"], seen["eager_hits"]
    if case.hooks is Hooks.NONE:
        assert hits is None
    else:
        assert seen["eager_error"] is None, seen["eager_error"]
        assert eager is not None and eager > 0, "the eager run must call the hook"
        if case.hooks is Hooks.SILENT:
            assert hits == 0, (hits, eager)
        elif case.hooks is Hooks.DIFFERS:
            assert hits != eager, (hits, eager)
        else:
            assert hits == eager, (hits, eager)

    findings = static_findings(case)
    marks = (
        marked_lines(case)
        if changed is None or changed.lines is None
        else {(case.script.name, line) for line in changed.lines}
    )
    assert {(f.span.path, f.span.line) for f in findings} == marks
    if not marks:
        assert not case.limit_hit and case.hooks in (Hooks.NONE, Hooks.SAME), "a quiet fixture must be cheap"
        return
    unbounded = (case.unbounded and not case.count_unknown) or _per_value(case)
    expected = Severity.WARNING if unbounded else Severity.INFO
    assert {f.severity for f in findings} == {expected}, [(f.span.line, f.severity) for f in findings]
    if case.limit_hit:  # the message names the limit torch hit
        named = f"{limit_setting()} ({case.limit})"
        assert all(named in f.message for f in findings), [f.message for f in findings]


def _per_value(case: Case) -> bool:
    """A str attribute compiles once per distinct value: unbounded even when the fixture uses only three."""
    return case.fixture == "DL111_str_mode_via_wrapper.py"


@pytest.mark.parametrize("code", CODES)
def test_every_fixture_of_a_usage_code_is_measured(code: str) -> None:
    covered = {case.root for case in CASES if case.code == code}
    covered |= {FIXTURES / case.fixture for case in GUARD_FILTER_CASES if case.code == code}  # one process each
    fixtures = set(FIXTURES.glob(f"{code}*"))
    assert fixtures == covered, fixtures ^ covered
    with_marks = [case for case in CASES if case.code == code and marked_lines(case)]
    assert len(with_marks) >= 3
    assert len([case for case in CASES if case.code == code]) - len(with_marks) >= 3
