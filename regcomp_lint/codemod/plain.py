"""Converting a plain PyTorch script (or one that compiles by hand) to Accelerate.

Finds the scope that builds the model and optimizer (a function, ``main()``, the module, or a
class's ``__init__`` holding ``self.model``), then plans: the plugin and the ``Accelerator``
before their first use, one ``prepare`` after the last prepared object is created, every
``backward`` through the accelerator, devices from the accelerator, hand compiles folded into
the plugin, and the script's own DDP set-up adapted (``hand_distribution``).
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable
from functools import partial

import libcst as cst

from regcomp_lint.analysis.bindings import Bound, Where, binding_key
from regcomp_lint.analysis.compile_settings.launches import launched_fields
from regcomp_lint.analysis.global_rebinders import rebinds_globals
from regcomp_lint.analysis.main_process import tests_the_rank
from regcomp_lint.analysis.training_objects import Kind
from regcomp_lint.analysis.training_roles import Cadence, Origin, TrainingRoles
from regcomp_lint.codemod.batch_methods import module_instances, own_batch_methods
from regcomp_lint.codemod.batch_seeds import split_hand_written_batches
from regcomp_lint.codemod.branch_bindings import guarded_prepare, refuse_unbound_at_prepare
from regcomp_lint.codemod.builders import call_statement, expression, statement, with_keyword
from regcomp_lint.codemod.checkpoint_writes import (
    guard_helper_saves,
    holds_a_main_process_test,
    move_written_files_once,
    save_the_rest_once,
    saves_into_memory,
    state_saves,
    wait_before_reading_back,
    wait_before_returning,
    write_on_main_process,
)
from regcomp_lint.codemod.closure_steps import loss_driven_step_refusal
from regcomp_lint.codemod.compile_sites import (
    CompileSite,
    collect_settings,
    find_compile_sites,
    refuse_compiles_in_builders,
)
from regcomp_lint.codemod.container_loaders import container_loader_refusal
from regcomp_lint.codemod.ddp_construction import compile_prefixed, tells_ddp
from regcomp_lint.codemod.device_choice import (
    assigned_device_keys,
    branch_condition,
    earlier_choices,
    is_cpu_value,
    is_cuda_value,
    local_rank_from_env,
    local_rank_note,
    model_gpu_choices,
    mps_or_cpu_condition,
    only_moves_devices,
    visible_devices_note,
)
from regcomp_lint.codemod.device_helpers import name_device_helpers
from regcomp_lint.codemod.device_parameters import follow_handed_device, keep_trainer_cpu_choice
from regcomp_lint.codemod.device_placement import places_on_device
from regcomp_lint.codemod.dispatched_models import refuse_dispatched_models
from regcomp_lint.codemod.distribution import Distribution
from regcomp_lint.codemod.drawn_batches import refuse_overdrawn_iterators
from regcomp_lint.codemod.edits import replaced_by
from regcomp_lint.codemod.evaluation_passes import evaluation_passes_note
from regcomp_lint.codemod.even_batches import even_batches_notes, whole_loader_per_rank_notes
from regcomp_lint.codemod.file_writes import write_files_once
from regcomp_lint.codemod.finite_skips import gather_finite_skips
from regcomp_lint.codemod.first_downloads import download_first
from regcomp_lint.codemod.frozen_parameters import allow_unused_parameters
from regcomp_lint.codemod.generators import is_generator, returns_a_generator
from regcomp_lint.codemod.gradient_clipping import clip_through_accelerator
from regcomp_lint.codemod.graph_loaders import graph_loader_refusal
from regcomp_lint.codemod.hand_distribution import (
    adapt_distribution,
    join_processes_only,
    join_processes_without_cuda,
    wrap_aliases,
)
from regcomp_lint.codemod.hand_schedules import (
    counted_save_notes,
    hand_lr_notes,
    step_counted_notes,
    valued_batch_step_note,
)
from regcomp_lint.codemod.handed_in import (
    HandedIn,
    caller_sources,
    find_handed_in,
    handed_optimizer,
    kept_attribute,
    kept_parameters,
    placements_before,
)
from regcomp_lint.codemod.handed_to_modules import unwrap_for_other_modules
from regcomp_lint.codemod.held_objects import held_objects, told_of_the_wrap
from regcomp_lint.codemod.host_batches import host_batch_loaders
from regcomp_lint.codemod.inference_only import trains_nothing
from regcomp_lint.codemod.iterable_batches import whole_batch_stream_refusal
from regcomp_lint.codemod.iterator_loaders import refuse_next_on_loaders
from regcomp_lint.codemod.lint_view import lint_view
from regcomp_lint.codemod.listed_loaders import listed_loader_notes
from regcomp_lint.codemod.load_locations import keep_cpu_load_locations
from regcomp_lint.codemod.local_modules import importer_of, is_project_module, load_local
from regcomp_lint.codemod.loss_scalers import loss_scaler_step
from regcomp_lint.codemod.main_only_steps import main_only_scheduler_steps
from regcomp_lint.codemod.method_loss import (
    MethodLoss,
    add_wrapper_class,
    plan_method_loss,
    prepared_as,
    regional_left_off,
)
from regcomp_lint.codemod.model_copies import copies_after_training, model_copies, model_wraps, plain_aliases
from regcomp_lint.codemod.module_globals import handed_through_globals
from regcomp_lint.codemod.never_loaders import never_a_loader
from regcomp_lint.codemod.object_saves import guard_object_saves
from regcomp_lint.codemod.optimizer_methods import placement_keyword, reach_own_methods
from regcomp_lint.codemod.optimizers import (
    FoundOptimizer,
    HandUpdate,
    find_optimizers,
    not_optimizers,
    stray_holders,
    updated_by_hand,
)
from regcomp_lint.codemod.options import NO_TRAINING_STEP, ConvertOptions
from regcomp_lint.codemod.per_process import PerProcess
from regcomp_lint.codemod.progress_bars import note_eager_iterators
from regcomp_lint.codemod.prompts import ask_once
from regcomp_lint.codemod.random_items import note_random_items
from regcomp_lint.codemod.reduced_sums import EpochSum, gather_sums
from regcomp_lint.codemod.regional import repeated_blocks
from regcomp_lint.codemod.reinit_sync import rebinds_itself, reinitialised_model, sync_reinitialised
from regcomp_lint.codemod.returned_models import unwrap_returned_models
from regcomp_lint.codemod.rewrites import Conversion, Planner, function_name
from regcomp_lint.codemod.roles import (
    Creation,
    backward_calls,
    bindings,
    bound_keys,
    creations,
)
from regcomp_lint.codemod.schedulers import unpacked_schedulers
from regcomp_lint.codemod.set_device_calls import drop_set_device_of_rewritten, guard_fixed_set_device
from regcomp_lint.codemod.settings import LAUNCH_FLAGS_NOTE, Refusal, ScriptSettings, Setting, StepElsewhere, resolve
from regcomp_lint.codemod.shard_metrics import shard_metric_notes
from regcomp_lint.codemod.sharded_factories import (
    sampler_beside,
    sharded_by_factory,
    sharded_by_own_method,
    sharded_on_another_branch,
)
from regcomp_lint.codemod.synced_values import evaluates_alike
from regcomp_lint.codemod.taken_apart import piece_keys, stray_refusal
from regcomp_lint.codemod.trackers import log_from_main_process
from regcomp_lint.codemod.trainer_models import (
    OptimizerMethod,
    TrainerModels,
    builder_methods,
    kept_from_init,
    model_factories,
    optimizer_method,
    prepared_after,
    refuse_made_again,
    refuse_rebound_models,
    refuse_repeated_training,
    refuse_settings_out_of_reach,
    settings_keys,
    trainer_models,
)
from regcomp_lint.codemod.tree import (
    Block,
    Function,
    Tree,
    code,
    find_all,
    header,
    init_of,
    key_of,
    method_named,
    methods_of,
    read_keys,
    single_target,
)
from regcomp_lint.codemod.uneven_guards import skips, uneven_guards
from regcomp_lint.codemod.uneven_steps import uneven_steps
from regcomp_lint.codemod.unknown_optimizers import unknown_optimizer_of, unrecognised_optimizer
from regcomp_lint.codemod.unwrapped_branches import note_wrapper_tests, taken_unwrapped
from regcomp_lint.codemod.wrapped_access import places_using_prepared, read_through_wrapper, sees_prepared
from regcomp_lint.codemod.wrapper_saves import save_wrapper_states_once
from regcomp_lint.files.parsing import walk
from regcomp_lint.knowledge import torch_api
from regcomp_lint.knowledge.accelerate_api import ACCELERATOR_IMPORT, DYNAMO_PLUGIN_IMPORT
from regcomp_lint.knowledge.training_libraries import ITERATION_BUILTINS, ITERATION_WRAPPERS, PROGRESS_RANGES

#: Builtins a training loop may iterate (``range``, ``zip``, ``enumerate``): never a data loader.
_BUILTIN_NAMES = frozenset(dir(builtins))

__all__ = ["NO_TRAINING_STEP", "PlainPlanner"]


def _plugin_text(settings: dict[str, Setting]) -> list[str]:
    return [f"{key}={setting.code}" for key, setting in settings.items()]


#: A one-process script given no ``cpu=`` (session 26, measured with Accelerate 1.15): under plain
#: ``torchrun`` Accelerate joins the processes on CUDA (``LOCAL_RANK`` set: MULTI_GPU) but on a
#: machine without CUDA only when told to use the CPU (MULTI_CPU, gloo); otherwise each rank
#: trains alone (``DistributedType.NO``, ``num_processes=1``). A ``cpu=`` that maps it would move
#: an MPS or XPU run to the CPU, so the conversion says it instead.
PLAIN_TORCHRUN_ON_CPU_NOTE = (
    "several processes on a machine without CUDA: use accelerate launch --cpu (or ACCELERATE_USE_CPU=1); under plain "
    "torchrun there each rank trains alone (cpu= is not written: it would move an MPS or XPU run to the CPU)"
)


class PlainPlanner(Planner):
    def __init__(self, tree: Tree, options: ConvertOptions, distribution: Distribution) -> None:
        super().__init__(tree, options)
        self.distribution = distribution
        #: keywords the created ``Accelerator(...)`` gets besides the plugin
        self.accelerator_keywords: list[str] = []
        #: when the created ``Accelerator`` must run on the CPU (joined into one ``cpu=`` keyword)
        self.cpu_conditions: list[str] = []
        #: nodes the ``Accelerator`` must be created after (a spawned worker's init_process_group)
        self.accelerator_after: list[cst.CSTNode] = []
        #: statements (source) written just before the plugin and the ``Accelerator``
        self.before_accelerator: list[str] = []
        #: statements (source) written just after the ``Accelerator`` (a handed-in device follows it)
        self.after_accelerator: list[str] = []
        #: the scope's backward calls, and those plus its calls into training (see training_steps)
        self._steps_found: tuple[list[cst.Call], list[cst.Call]] | None = None
        #: the backward calls of a script no DataLoader feeds (its batches are its own: batch_seeds.py)
        self.hand_written_batches: list[cst.Call] | None = None
        #: device flag -> the branch (condition, tests) of the one device choice that reads it
        self.flag_branches: dict[str, tuple[str, list[cst.BaseExpression]] | None] = {}
        #: the model's parameters updated by hand in place of an optimizer (word language model)
        self.hand_update: HandUpdate | None = None
        self.handed_in: HandedIn | None = None  # Trainer(model, loader, optimizer): prepared in its __init__
        #: where in the prepare block each key is prepared, when runs in sequence prepare at several places
        self.prepared_at: dict[str, int] = {}
        #: ``fwd_model = torch.compile(model) if c else model``, now ``fwd_model = model``: must follow prepare()
        self.compiled_aliases: list[cst.Assign] = []
        self.plain_models: set[str] = set()  # trained models a wrap under another name prepares (wrap_aliases)
        self.wrap_inputs: set[str] = set()  # compiled aliases of them that only that wrap reads
        #: the one model method that computes the loss, trained through a wrapper module (method_loss.py)
        self.method_loss: MethodLoss | None = None
        #: the trainer class whose __init__ binds the models its training method prepares (trainer_models.py)
        self.trainer_models: TrainerModels | None = None
        #: ``self.set_optimizer()``: the method that builds the optimizer, called by the scope
        self.optimizer_method: OptimizerMethod | None = None
        #: the trainer __init__ of init_builders and its builder methods, found once
        self._builders: tuple[Function, list[tuple[cst.FunctionDef, cst.Call]]] | None = None

    def plan(self) -> Conversion:
        tree = self.tree
        backwards = backward_calls(tree, set())
        scaled_step = loss_scaler_step(tree, backwards)
        if scaled_step is not None:
            raise StepElsewhere(scaled_step)
        if not backwards and self.distribution.data_parallel and not trains_nothing(tree):
            # MAE's main_pretrain.py + engine_pretrain.py (an evaluation script's DataParallel is no training)
            raise StepElsewhere(
                f"it wraps the model for data parallelism ({self.distribution.describe(tree)}) but has no X.backward() "
                "of its own: its training step runs elsewhere (another module, a loss scaler); convert by hand"
            )
        if not backwards:
            raise Refusal(NO_TRAINING_STEP)
        self._refuse_double_backward()
        steps: set[Function] = {tree.function_of(c) for c in backwards}
        # a closure handed to the optimizer (`optimizer.step(closure)`, LBFGS) trains where it is defined
        steps |= {tree.function_of(f) for f in list(steps) if isinstance(f, cst.FunctionDef) and _is_passed(tree, f)}
        self.training = self.graph.closure_of_callers(steps)
        self._find_scope()
        self._check_free_names()
        self.models, self.optimizers, self.loaders, self.schedulers = self._roles()
        self._refuse_rank_guarded_steps(backwards)
        refuse_dispatched_models(self)
        sharded = {*self.loaders, *self.sharded_loaders, *self.inline_loaders}
        alike: list[cst.Call] = []

        def computed_alike(call: cst.Call) -> bool:
            if evaluates_alike(tree, call, sharded):
                alike.append(call)
                return True
            return False

        self.varies = PerProcess(tree, computed_alike, frozenset(sharded))  # also read by the checkpoint barriers
        if not self.distribution.data_parallel:
            gathered: list[EpochSum] = []
            uneven = uneven_steps(tree, self.graph, backwards, computed_alike, frozenset(sharded), gathered)
            self.varies.summed |= {a for one in gathered for a in one.additions}
            uneven = uneven or uneven_guards(tree, self.graph, backwards, self.varies)
            if uneven is not None:
                raise Refusal(uneven)
            gather_sums(self, gathered)
            gather_finite_skips(self, backwards)
            for call in dict.fromkeys(alike):
                self.notes.append(
                    f"a loop that trains ends on what {code(call).strip()} (line {tree.line(call)}) returns: an "
                    "evaluation of the synchronized model in eval mode on data left whole, the same on every "
                    "process, so every process stops at the same step"
                )
        if self.distribution.by_hand:
            adapt_distribution(self)
        elif not self.loaders and not self.sharded_loaders and not self.inline_loaders:
            handed = self._iterated_parameters()
            kept = self._iterated_kept_parameters()
            if handed:  # a Flower client's train_one_epoch(model, loader): the caller's DataLoader
                self.notes.append(
                    f"{_names(handed)} {'is a parameter' if len(handed) == 1 else 'are parameters'} of "
                    f"{function_name(self.scope)}: what its callers hand in is not prepared here, so every process "
                    "iterates all of its batches; prepare the loader where it is built to give each process its share"
                )
            elif kept:  # card_ar's ARTrainer(model, train_loader, ...): `next(iter(self.train_loader))`
                init = kept[0][2]
                self.notes.append(
                    f"{_names([f'{key} (the parameter {param} of {init})' for key, param, _ in kept])}"
                    f" feed{'s' if len(kept) == 1 else ''} the training loop: what the callers of {init} hand in is "
                    "not prepared here, so every process iterates all of its batches; prepare the loader where it "
                    "is built to give each process its share"
                )
            elif built := self._unprepared_built_loaders():  # swara_jepa: built in `self._build_data()`
                self.notes.append(
                    f"{_names(built)} feed{'s' if len(built) == 1 else ''} the training loop and "
                    f"{'is' if len(built) == 1 else 'are'} not prepared (built where the conversion does not "
                    "prepare), so every process iterates all of its batches; prepare the loader where it is built "
                    "to give each process its share"
                )
            else:
                self.hand_written_batches = backwards  # split once the Accelerator's place is known
        self.method_loss = plan_method_loss(self)
        if self.method_loss is not None:
            add_wrapper_class(self, self.method_loss)
        script = ScriptSettings()
        # `compiled_model = torch.compile(base_model)` feeding `model = DDP(compiled_model)`: a compile of the model
        # `model = torch.compile(model)` then `ddp_model = DDP(model)`: a compile of the model too
        sites = find_compile_sites(tree, self.scope, set(self.models) | self.plain_models | set(self._wrap_inputs()))
        refuse_compiles_in_builders(tree, self.scope, set(self.models))
        if self.accelerator_home is not self.scope:  # `self.model = torch.compile(self.model)` in __init__
            sites = find_compile_sites(tree, self.accelerator_home, set(self.models)) + sites
            for factory, returned in self.init_factories:  # or in `self.model = self.build_model()`'s method
                sites = find_compile_sites(tree, factory, {returned}) + sites
        for helper in self.init_helpers:  # or in a method __init__ calls once to build the model
            sites = find_compile_sites(tree, helper, set(self.models)) + sites
        collect_settings(tree, sites, script)
        trainer = self.trainer_models
        if trainer is None and self.init_helpers and self.owner is not None:  # __init__ prepares what they build
            assert isinstance(self.scope, cst.FunctionDef)
            trainer = TrainerModels(self.owner, self.scope)

        def settings_in(where: Function) -> list[cst.BaseExpression]:
            """What the compile sites in ``where`` read for the plugin: conditions and keywords."""
            return [
                expr
                for site in sites
                if tree.contains(where, site.call)
                for expr in [
                    *([site.condition] if site.condition is not None else []),
                    *(a.value for a in site.call.args if a.keyword is not None),
                ]
            ]

        if self.trainer_models is not None:  # the plugin is made in __init__: what the training method's compile reads
            refuse_settings_out_of_reach(self, self.trainer_models, settings_in(self.scope))
        if trainer is not None:
            for helper in [*self.init_helpers, *(f for f, _ in self.init_factories)]:  # its parameters are its own
                refuse_settings_out_of_reach(self, trainer, settings_in(helper), helper)
        self._remove_compiles(sites)
        reason = self._regional_reason()
        settings, setting_notes = resolve(script, self.options, reason, launched_fields(tree.filename or "-"))
        self._rewrites(backwards)
        wrapped = self._ddp_wrapped_keys()
        saved = [m for m in wrapped if m in self.saved_states]
        if saved:
            # MoCo's main_lincls strips `module.encoder_q.`: the converted checkpoints have no `module.`
            prefix = _saved_prefix(tree, saved[0], wrapped[saved[0]])
            self.notes.append(
                f"the original saved the DDP-wrapped model's state_dict(), whose keys start with `{prefix}`; the "
                "converted script saves and loads the unwrapped model's, without it (strip the prefix to resume from "
                "an old checkpoint, and in code that reads these files)"
            )
        from_env = local_rank_from_env(tree)
        if from_env is not None:
            option, value = from_env
            default = expression(value, self.module)
            self.edits.on(option, lambda u: with_keyword(u, "default", default))
            self.imports.append(("os", None))
            self.notes.append(
                f"the rank option at line {tree.line(option)} (--local_rank) now defaults to {value}: torchrun and "
                "accelerate launch set LOCAL_RANK and pass no option, so the code that tests it (its distributed "
                "set-up, sampler, rank-0 saves) sees each process's rank as under python -m torch.distributed.launch"
            )
        else:
            rank_note = local_rank_note(tree)
            if rank_note is not None:
                self.notes.append(rank_note)
        visible_note = visible_devices_note(tree)
        if visible_note is not None:
            self.notes.append(visible_note)
        self._stay_on_cpu_without_devices()
        self._keep_one_loss_scaling()
        self._keep_hand_update_unscaled()
        allow_unused_parameters(self)
        self._let_step_take_a_closure()
        follow_handed_device(self)
        note_eager_iterators(self, self.loaders)
        note_random_items(self, self.loaders)
        refuse_next_on_loaders(self.tree, self.loaders)
        if self.trainer_models is not None:
            refuse_rebound_models(self, self.trainer_models)
        self._place(settings, script)
        self.imports += [ACCELERATOR_IMPORT, DYNAMO_PLUGIN_IMPORT]
        self._describe(settings, reason, sites)
        if (
            settings.get("use_regional_compilation", Setting("", "")).code != "True"
        ):  # (regional: prepare() gives the DDP)
            places = [self.scope, *self.owner_methods(), *places_using_prepared(self)]
            self.notes += note_wrapper_tests(self, places, self.models)
        self.notes += setting_notes
        self.notes += main_only_scheduler_steps(self)
        return self.conversion()

    @property
    def accelerator_home(self) -> Function:
        """Where the Accelerator is made: the scope, or the ``__init__`` of a trainer whose training
        method prepares the model ``__init__`` binds (trainer_models.py)."""
        return self.trainer_models.init if self.trainer_models is not None else self.scope

    @property
    def init_factories(self) -> list[tuple[cst.FunctionDef, str]]:
        """``self.model = self.build_model()`` in a trainer's ``__init__``: the factory methods it
        calls once, with the name each returns (trainer_models.py)."""
        return model_factories(self.tree, self.trainer_models) if self.trainer_models is not None else []

    @property
    def init_helpers(self) -> list[cst.FunctionDef]:
        """The methods a trainer's ``__init__`` calls once to bind its models, loaders and the rest
        (``self._build_model()``, ``self._build_data()``): their code is ``__init__``'s
        (trainer_models.py)."""
        return [helper for helper, _ in self.init_builders]

    @property
    def init_builders(self) -> list[tuple[cst.FunctionDef, cst.Call]]:
        """The builder methods of the trainer ``__init__`` whose Accelerator is made there (the
        accelerator home, or the scope), each with its call there (trainer_models.builder_methods)."""
        home = self.accelerator_home
        if (
            not isinstance(home, cst.FunctionDef)
            or home.name.value != "__init__"
            or self.owner is None
            or self.tree.class_of(home) is not self.owner
        ):
            return []
        if self._builders is None or self._builders[0] is not home:
            skip: list[Function] = [self.scope]
            if self.optimizer_method is not None:
                skip.append(self.optimizer_method.method)
            found = builder_methods(self.tree, home, skip)
            if self.trainer_models is not None:  # the model's helper is one, whatever it binds
                found += [h for h in self.trainer_models.helpers if all(h[0] is not f for f, _ in found)]
            self._builders = (home, found)
        return self._builders[1]

    # -- where the model lives ----------------------------------------------------------------
    def _functions(self) -> list[Function]:
        return [self.tree.module, *find_all(self.tree.module, cst.FunctionDef)]

    def _find_scope(self) -> None:
        tree = self.tree
        found: list[tuple[Function, str | None, list[str]]] = []  # (where, optimizer, its models)
        untraced: list[str] = []
        untraced_found: list[tuple[Function, FoundOptimizer]] = []
        for function in self._functions():
            for optimizer in find_optimizers(tree, function):
                if optimizer.key in _returned_keys(function):
                    continue  # a factory: the optimizer is found where the factory is called
                if optimizer.models:
                    found.append((function, optimizer.key, optimizer.models))
                else:
                    untraced_found.append((function, optimizer))
                    wrapper = _unread_wrapper(tree, function, optimizer.key)
                    untraced.append(
                        f"{optimizer.key} = {optimizer.construct}(...) at line {tree.line(optimizer.stmt)} is "
                        + (
                            f"handed to {wrapper[0]}(...) at line {wrapper[1]}, a class of the project module "
                            f"{wrapper[2]}, which is not beside the script: what that builds cannot be told an optimizer"
                            if wrapper is not None
                            else "built from parameters whose model cannot be traced"
                        )
                    )
        if not any(function in self.training for function, _, _ in found):
            handed = find_handed_in(tree, self.graph, self.training)
            if handed is not None:  # Trainer(model, loader, optimizer): prepare where it keeps them
                self.handed_in = handed
                found = [(handed.init, handed.optimizer, handed.models)]
                self.drop_placements(placements_before(tree, handed))
                keep_trainer_cpu_choice(self, handed)
                self.notes.append(
                    f"{', '.join(handed.models)} and {handed.optimizer} are handed to the trainer: prepared in its __init__"
                )
        if not found:
            others = [
                f"{text!r} at line {line} is fed model parameters but is not used as an optimizer"
                for function in self._functions()
                for text, line in not_optimizers(tree, function)
            ]
            detail = "; ".join(untraced + others)
            if untraced and self.distribution.data_parallel:
                # modded-nanogpt, improved-diffusion: their own DDP, optimizers over raw_model's pieces
                raise Refusal(
                    f"it wraps the model for data parallelism by hand ({self.distribution.describe(tree)}) and builds "
                    f"its optimizers from parameters the converter cannot trace to that model ({untraced[0]}); "
                    "convert by hand"
                )
            by_hand = updated_by_hand(tree)
            scope = self._hand_update_scope(by_hand) if by_hand is not None else None
            if by_hand is not None and scope is None:
                raise Refusal(
                    f"the parameters are updated by hand ({by_hand.text!r} at line {by_hand.line}), with no optimizer "
                    f"for prepare() to wrap, and {by_hand.model} is not built where the training code can be "
                    "prepared; convert by hand: accelerator.prepare(model) and accelerator.backward(loss) keep that "
                    "update working (DDP averages the gradients it reads)"
                )
            if by_hand is not None and scope is not None:
                found = [(scope, None, [by_hand.model])]
                self.hand_update = by_hand
        handed_elsewhere = handed_optimizer(tree, self.training) if not found else None
        if handed_elsewhere is not None:
            receiver, key, line = handed_elsewhere
            sources = caller_sources(tree, self.training, key)
            source = f" (from {', '.join(sources)}, which the converter cannot read)" if sources else ""
            raise Refusal(
                f"the optimizer {key} (stepped at line {line}) is handed to {receiver} by its caller, which builds it"
                f"{source} and the models it trains; which models it optimizes is only known there: convert by hand "
                f"(prepare them where they are built and hand the accelerator to {receiver})"
            )
        if not found:
            # what the script zeroes and steps, first: the real optimizer, where a line only "fed
            # model parameters" (a gradient norm's torch._foreach_norm) would hide it (survey 21e)
            detail = "; ".join(part for part in (unrecognised_optimizer(tree), detail) if part)
            raise Refusal(
                "no optimizer found (a torch.optim class, a torch.optim.Optimizer subclass, a function returning one, "
                "or something built from model.parameters() and stepped)"
                + (f": {detail}" if detail else "")
                + "; convert by hand"
            )
        scopes: list[Function] = []
        for function, _, _ in found:
            if all(function is not s for s in scopes):
                scopes.append(function)
        if len(scopes) > 1:
            training_scopes = [s for s in scopes if s in self.training]
            if len(training_scopes) != 1:
                # `self.model, self.optimizer = setup(cfg)` in a trainer's __init__: setup() hands
                # its optimizer back in a tuple or dict; it is prepared where it is taken apart
                takers = [s for s in scopes if not _hands_back(s, [k for f, k, _ in found if f is s])]
                training_scopes = takers if len(takers) == 1 else training_scopes
            if len(training_scopes) != 1:
                where = ", ".join(_optimizer_place(tree, s) for s in scopes)
                raise Refusal(
                    f"optimizers are built in several places ({where}); convert by hand or build them in one function"
                )
            scopes = training_scopes
        made = optimizer_method(
            self,
            scopes[0],
            [key for function, key, _ in found if function is scopes[0] and key is not None],
            [m for function, _, models in found if function is scopes[0] for m in models],
        )
        if made is not None:  # `self.set_optimizer()` in train(): the optimizer is made at that call
            self.optimizer_method = made
            found = [(made.caller if function is made.method else function, key, ms) for function, key, ms in found]
            scopes = [made.caller]
            built = [*made.keys, *made.schedulers]
            where = f"built by {code(made.statement).strip()} (line {tree.line(made.statement)})"
            self.notes.append(
                f"{', '.join(built)} are {where}: the prepare() of {function_name(made.caller)} runs right after that "
                "call (each scheduler prepared or not by how often it steps)"
                if made.schedulers
                else f"{', '.join(built)} {'is' if len(built) == 1 else 'are'} {where}: prepared in "
                f"{function_name(made.caller)} right after that call"
            )
        self.scope = scopes[0]
        self.optimizer_found = [
            (key, [kept_attribute(tree, self.scope, m) or _wrapped_model(self.scope, m) for m in models])
            for function, key, models in found
            if function is self.scope
        ]
        self._beside_traced([o for function, o in untraced_found if function is self.scope])
        self_keys = all((key or models[0]).startswith("self.") for key, models in self.optimizer_found)
        owner = tree.class_of(self.scope)
        # `optimizer = Adam(self.model.parameters())` in train(), self.model bound in __init__: the
        # Accelerator is the trainer's too (trainer_models.py)
        trained = [m for _, models in self.optimizer_found for m in models]
        self_keys = self_keys or (bool(trained) and all(kept_from_init(tree, self.scope, m) for m in trained))
        self.owner: cst.ClassDef | None  # the class whose methods build and train, when they use self.*
        if self_keys and owner is not None:
            methods = methods_of(owner)
            if not any(m in self.training for m in methods):
                raise Refusal(
                    f"class {owner.name.value} builds the optimizer but none of its methods trains; convert by hand"
                )
            self.acc_key = "self.accelerator"
            self.owner = owner
        else:
            self.owner = None
            if self.scope not in self.training and self._handed_through_globals(every=True):
                # NNI's prepare(): the training code reads what it prepares as module globals, and
                # the accelerator too (module_globals.py)
                self.global_accelerator = True
                self.notes.append(
                    f"{function_name(self.scope)} hands the objects to the training code through module globals: "
                    "it prepares them there and makes the accelerator a module global too (global accelerator)"
                )
            elif self.scope not in self.training:
                for function in tree.in_source_order(self.training):
                    for holder in stray_holders(tree, function):
                        raise Refusal(stray_refusal(tree, holder))
                raise Refusal(
                    f"the model and optimizer are built in {function_name(self.scope)}, which does not run the training loop"
                    f"{self._unfollowed_result()}{self._handed_through_globals()}; build them where the loop runs, or "
                    "convert by hand"
                )

    def _handed_through_globals(self, *, every: bool = False) -> str:
        """The optimizer and models the scope hands to the training code through module globals
        (NNI's ``prepare()``; module_globals.py), said for a refusal; with ``every``, only when all
        of them are."""
        keys = [k for key, models in self.optimizer_found for k in [key or "", *models] if k]
        return handed_through_globals(self.tree, self.scope, list(dict.fromkeys(keys)), self.training, every=every)

    def _unfollowed_result(self) -> str:
        """For a refusal: where the training code calls the helper that builds the model and
        optimizer, and what the helper returns (``SimpleNamespace(model=..., optimizer=...)``, an
        object of its own class) that the converter cannot take the optimizer out of."""
        tree = self.tree
        if not isinstance(self.scope, cst.FunctionDef):
            return ""
        calls = [call for caller, call in self.graph.callers_of(self.scope) if caller in self.training]
        returns = [r for r in find_all(self.scope, cst.Return, enter_functions=False) if r.value is not None]
        if not calls or not returns:
            return ""
        statement = code(tree.line_of(calls[0])).strip().splitlines()[0]
        returned = returns[0].value
        assert returned is not None
        shown = code(returned).strip().splitlines()[0]
        return (
            f"; the training code calls it at line {tree.line(calls[0])} ({statement!r}) and takes the model and "
            f"optimizer out of {shown} (line {tree.line(returns[0])}): regcomp-fix follows a helper's result only "
            "as the optimizer itself, a tuple, or a tuple or dict with constant keys the caller takes apart "
            "(model, optimizer = parts; parts['optimizer'])"
        )

    def _beside_traced(self, untraced: list[FoundOptimizer]) -> None:
        """An optimizer of the scope whose parameters cannot be traced (airbench's
        ``SGD(param_configs)`` of ``dict(params=[model.whiten.bias])`` groups beside a Muon over
        the same model): with one model prepared there, its parameters can only be that model's,
        so it is prepared with the others (left out, it would step unscaled fp16 gradients and
        miss the accelerator's gradient accumulation). With several models, which one it trains
        is unknown: refused, naming it."""
        keys = {key for key, _ in self.optimizer_found}
        extra = [o for o in untraced if o.key not in keys]
        if not extra or not self.optimizer_found:
            return
        models = {m for _, owners in self.optimizer_found for m in owners}
        lines = ", ".join(f"{o.key} = {o.construct}(...) at line {self.tree.line(o.stmt)}" for o in extra)
        if len(models) != 1:
            raise Refusal(
                f"{lines} is built from parameters the converter cannot trace to one of the models "
                f"({', '.join(sorted(models))}); prepare it by hand with the others, or convert by hand"
            )
        for optimizer in extra:
            self.optimizer_found.append((optimizer.key, sorted(models)))
        self.notes.append(
            f"{lines}: its parameters cannot be traced, but {next(iter(models))} is the only model the scope "
            "prepares, so it is prepared with the other optimizers"
        )

    def _hand_update_scope(self, update: HandUpdate) -> Function | None:
        """Where the model whose parameters are updated by hand is built, when the training code
        runs there (or, built at module level, uses it as a global): it is prepared there, with no
        optimizer. Its update reads ``p.grad`` after ``accelerator.backward()``: DDP's averages."""
        places = [f for f in self._functions() if bindings(f, update.model)]
        if len(places) != 1:
            return None
        place = places[0]
        if place in self.training or (isinstance(place, cst.Module) and self.training):
            return place
        return None

    def _wrap_inputs(self) -> list[str]:
        """The model each prepared DDP wrap under its own name takes (``model`` of
        ``ddp_model = DDP(model)``). prepare() compiles the wrap, so a hand-written compile of
        ``model`` is a compile of the trained model, and ``model`` is what has repeated blocks
        (survey26d speedrun_optuna)."""
        inputs: list[str] = []
        for key, call in self._ddp_wrapped_keys().items():
            given = call.args[0] if call.args else None
            if key not in self.models or given is None or given.keyword is not None or given.star:
                continue
            name = key_of(given.value)
            if name is not None and name != key and name not in inputs:
                inputs.append(name)
        return inputs

    def _ddp_wrapped_keys(self) -> dict[str, cst.Call]:
        """Names the script bound to a DDP wrap (``model = DDP(model)``), with the wrap: their
        state dicts had ``module.`` keys in the original."""
        found: dict[str, cst.Call] = {}
        for call in self.distribution.multi_process_wraps(self.tree):
            for anc in self.tree.ancestors(call):
                target = single_target(anc) if isinstance(anc, cst.Assign) else None
                if target is not None:
                    found.setdefault(target[0], call)
                    break
        return found

    def drop_placements(self, calls: list[cst.Call], preparer: str = "the trainer") -> None:
        """``Net().to(device)`` -> ``Net()`` and ``model.to(device)`` (a statement) removed, for a
        model ``preparer`` prepares: prepare() places it on each process's own device."""
        tree = self.tree
        for call in calls:
            assert isinstance(call.func, cst.Attribute)
            parent = tree.parent(call)
            if isinstance(parent, cst.Expr):
                self.remove_small(parent)
            else:
                self.edits.on(call, _receiver_of)
            self.notes.append(
                f".{call.func.attr.value}({', '.join(code(a.value) for a in call.args)}) of the model at line "
                f"{tree.line(call)} removed: {preparer}'s prepare() places it on each process's own device"
            )

    def _check_free_names(self) -> None:
        for name in ("accelerator", "dynamo_plugin"):
            key = f"self.{name}" if self.owner is not None and name == "accelerator" else name
            places = [self.scope, self.tree.module, *self.owner_methods()]
            for place in places:
                if bindings(place, key):
                    raise Refusal(f"the script already uses the name {key!r}; rename it before converting")

    # -- what gets prepared ---------------------------------------------------------------------
    def _roles(self) -> tuple[list[str], list[str], list[str], list[str]]:
        tree = self.tree
        # one key however many branches build it (torchvision's `if opt_name == "sgd": optimizer = SGD(...)` ...)
        optimizers = list(dict.fromkeys(key for key, _ in self.optimizer_found if key is not None))
        models: list[str] = []
        for _, owners in self.optimizer_found:
            models += [m for m in owners if m not in models]
        if self.owner is None:  # `train_model = DDP(model)`: the wrap's name is prepared, `model` stays plain
            aliases, self.wrap_inputs = wrap_aliases(
                tree, self.scope, self.distribution.data_parallel, models, self.training
            )
            self.plain_models = set(aliases)
            models = [aliases.get(m, m) for m in models]
        if "self" in models:  # `self.opt = Adam(self.parameters())` in a module's own __init__
            owner = tree.class_of(self.scope) if isinstance(self.scope, cst.FunctionDef) else None
            where = (
                f"{owner.name.value}.{function_name(self.scope)}" if owner is not None else function_name(self.scope)
            )
            raise Refusal(
                f"the optimizer is built from self.parameters() in {where} (line {tree.line(self.scope)}): the model would "
                "prepare itself (each instance its own Accelerator); build the optimizer where the model is "
                "created, or convert by hand"
            )
        for model in models:
            if (
                self.owner is not None
                and not tree.is_parameter(model, self.scope)
                and kept_from_init(tree, self.scope, model)
            ):  # `self.model = Net()` in __init__, its optimizer in train(): prepared there (trainer_models.py)
                self.trainer_models = trainer_models(self, model, self.trainer_models)
                continue
            if self.owner is not None:
                refuse_made_again(tree, self.scope, model)
            if not bindings(self.scope, model) and not tree.is_parameter(model, self.scope):
                raise Refusal(
                    f"the model {model}{self._built_elsewhere(model)} is not created in {function_name(self.scope)}"
                    f"{f' (line {tree.line(self.scope)})' if isinstance(self.scope, cst.FunctionDef) else ''}, where "
                    "its optimizer is; convert by hand"
                )
            if (
                isinstance(self.scope, cst.FunctionDef)
                and self.owner is None
                and tree.is_parameter(model, self.scope)
                and not tree.references_to(self.scope)
            ):  # the Hogwild example's train(rank, args, model, ...), started by main.py's mp.Process
                raise Refusal(
                    f"{function_name(self.scope)} is handed its model and is not called in this file: another "
                    "module drives it (once per worker or per epoch), and an Accelerator made in it would be made on "
                    "every call; regcomp-fix converts neither this file nor its caller on its own: convert by hand, creating "
                    "the Accelerator and preparing the model and optimizer where the model is built, and handing the "
                    "accelerator in"
                )
        if self.trainer_models is not None:
            refuse_repeated_training(self, self.trainer_models)
        loaders: list[str] = []
        schedulers: list[str] = []
        skipped: list[str] = []
        self.kept_schedulers: list[str] = []  # stepped per epoch: created before prepare, not prepared
        self._valued_steps: list[tuple[str, ast.Call, str]] = []  # stepped with a value: (key, step, its note)
        self._counted_schedulers: dict[str, ast.stmt] = {}  # per step of a loop a counter ends: its loop
        self.inline_loaders: list[str] = []  # `cycle(DataLoader(...))`: prepared where they are built
        self.inline_origins: list[Origin] = []  # and what each of them is
        self.sharded_loaders: list[str] = []  # fed a DistributedSampler: already one shard per rank
        prepared_origins: dict[str, Origin | None] = {}  # the training loaders prepared here, by key
        view = lint_view(tree)
        home = self.accelerator_home
        # a trainer whose __init__ binds the model keeps its loaders there too (trainer_models.py)
        made_here = [*creations(self.scope), *(creations(home) if home is not self.scope else [])]
        for helper in self.init_helpers:  # `self._build_model()` in __init__: its code is __init__'s
            made_here += creations(helper)
        if self.optimizer_method is not None:  # `self.scheduler = ...` beside the optimizer in set_optimizer()
            made_here += [
                c for c in creations(self.optimizer_method.method) if c.key in self.optimizer_method.schedulers
            ]
        pieces = piece_keys(tree, self.scope)  # `scheduler = parts["scheduler"]` of a helper's dict
        for creation in made_here:
            if creation.key in loaders + schedulers + optimizers + models + self.kept_schedulers + self.sharded_loaders:
                continue
            built = view.origin(creation.value)
            if built is not None and built.kind is Kind.SCHEDULER and pieces.get(creation.key) is creation.stmt:
                assert view.roles is not None
                self._sort_scheduler(creation.key, *view.roles.cadence(built), schedulers, built)
                continue
            handed = built is None and self._handed_loader(view, creation.value, self.tree.function_of(creation.stmt))
            if handed:
                built = handed
            elif self._prepare_inline(view, creation, built):
                continue
            elif built is None or built.call is not view.expression_at(creation.value) or view.roles is None:
                continue  # not built here (an alias of another object), or nothing the roles know
            assert built is not None and view.roles is not None
            if built.kind is Kind.DATALOADER:
                shard = view.roles.shard_reason(built)
                if shard is None and (value := view.expression_at(creation.value)) is not None:
                    branch = view.roles.factory_shard_reason(value, view.where(value))
                    if branch is not None and isinstance(value, ast.Call):
                        shard = f"{branch} when {ast.unparse(value.func)}() builds it for several processes"
                if shard is not None:
                    self.sharded_loaders.append(creation.key)
                    if creation.key in loaders:  # bound unsharded on another branch first
                        loaders.remove(creation.key)
                        prepared_origins.pop(creation.key, None)
                    self.notes.append(
                        f"{creation.key} is {shard}: left unprepared, so every rank sees the batches it saw before"
                    )
                elif view.roles.is_training_loader(built):
                    loaders.append(creation.key)
                    prepared_origins[creation.key] = built
                else:
                    skipped.append(creation.key)
            elif built.kind is Kind.SCHEDULER:
                self._sort_scheduler(creation.key, *view.roles.cadence(built), schedulers, built)
        # `optimizer, scheduler = build_optimizer(model, cfg)`, of this file or of another module
        for unpacked in unpacked_schedulers(tree, self.scope):
            if unpacked.key not in loaders + schedulers + optimizers + models + self.kept_schedulers:
                self._sort_scheduler(unpacked.key, unpacked.cadence, unpacked.step, schedulers)
        handing: list[tuple[Creation, Origin | None]] = []  # bound by name in a caller of the scope
        for function in tree.in_source_order(self.training):  # loaders a training function builds itself
            if function is not self.scope and isinstance(function, cst.FunctionDef):
                for creation in creations(function):
                    built = view.origin(creation.value)
                    if self._calls_into_scope(function):
                        handing.append((creation, built))
                    else:
                        self._prepare_inline(view, creation, built)
        unknown = self._loaders_of_unknown_origin(view, loaders + skipped + optimizers + models + schedulers)
        loaders += unknown
        prepared_origins.update(dict.fromkeys(unknown))
        handed_in = self._handed_training_loaders(view, loaders + skipped + optimizers + models + schedulers)
        loaders += list(handed_in)
        prepared_origins.update(handed_in)
        for creation, built in handing:  # not handed to a loader the scope prepares: prepared where it is built
            if not self._handed_to_scope(creation, loaders):
                self._prepare_inline(view, creation, built)
        counted = [key for key in schedulers if key in self._counted_schedulers]
        if counted and (loaders or self.inline_loaders):
            for key in counted:
                loop = self._counted_schedulers[key]
                self.kept_schedulers.append(key)
                schedulers.remove(key)
                self.notes.append(
                    f"{key} steps once per optimizer step of a loop whose number of steps a counter fixes (line "
                    f"{loop.lineno}): each process takes the original's steps over its share of the data, so it is "
                    "left unprepared and its LR moves exactly as in the original (a prepared scheduler steps once per "
                    "process, and its schedule would run out part-way)"
                )
        if schedulers and not loaders and not self.inline_loaders:
            # accelerate's prepared scheduler steps once per process at each optimizer step, for
            # a loader prepare() shards; every process here takes as many steps as the original
            for key in schedulers:
                self.kept_schedulers.append(key)
                self.notes.append(
                    f"{key} steps once per optimizer step, and no DataLoader of the training loop is prepared (each "
                    "process takes as many steps as the original): left unprepared, so its LR moves exactly as in the "
                    "original (a prepared scheduler steps once per process)"
                )
            schedulers = []
        for key in skipped:
            if key not in loaders:
                self.notes.append(
                    f"{key} is not iterated by the training loop: left unprepared (evaluation is not sharded)"
                )
        refuse_overdrawn_iterators(
            tree, tree.in_source_order({*self.training, self.scope}), loaders, self.inline_loaders
        )
        refusal = container_loader_refusal(view, loaders + self.inline_loaders + self.sharded_loaders)
        if refusal is None:
            origins = [o for o in prepared_origins.values() if o is not None]
            refusal = (
                whole_batch_stream_refusal(view, origins + self.inline_origins)
                or graph_loader_refusal(view, loaders + self.inline_loaders)
                or loss_driven_step_refusal(view, loaders + self.inline_loaders)
            )
        if refusal is not None:
            raise Refusal(refusal)
        self.notes += evaluation_passes_note(view, prepared_origins, self.acc_key)
        for key, step, note in self._valued_steps:  # a value counted in the batches of a prepared loader
            paced = valued_batch_step_note(view.parsed, key, step, loaders)
            if paced is not None and note in self.notes:
                self.notes[self.notes.index(note)] = paced
        self.notes += hand_lr_notes(tree, self.training, loaders)
        self.notes += step_counted_notes(tree, self.training, loaders)
        self.notes += counted_save_notes(tree, self.training, loaders)
        self.notes += shard_metric_notes(tree, self.training, loaders + self.inline_loaders)
        inline = {f"the DataLoader at line {o.built.lineno}": o for o in self.inline_origins}
        self.notes += even_batches_notes(view, {**prepared_origins, **inline})
        if self.distribution.multi_process_wraps(tree):
            self.notes += whole_loader_per_rank_notes([*loaders, *self.inline_loaders])
        order = self._first_binding_order()
        return (
            sorted(models, key=order),
            sorted(optimizers, key=order),
            sorted(loaders, key=order),
            sorted(schedulers, key=order),
        )

    def _sort_scheduler(
        self, key: str, how: Cadence, step: ast.Call | None, schedulers: list[str], built: Origin | None = None
    ) -> None:
        """Into ``schedulers`` (prepared) a scheduler stepped once per optimizer step (or of unknown
        cadence), into ``kept_schedulers`` one stepped per epoch, with a value, or by another scheduler.
        One stepped per step of a loop a counter ends is noted in ``_counted_schedulers`` (kept
        when a loader is prepared: see ``TrainingRoles.counted_loop``)."""
        if how in (Cadence.PER_EPOCH, Cadence.BY_VALUE) and step is not None:
            self.kept_schedulers.append(key)
            when = "once per epoch" if how is Cadence.PER_EPOCH else "with a value (a metric or an epoch)"
            note = (
                f"{key} steps {when} (line {step.lineno}): left unprepared, so its LR "
                "moves exactly as in the original (a prepared scheduler steps once per process)"
            )
            self.notes.append(note)
            if how is Cadence.BY_VALUE:
                self._valued_steps.append((key, step, note))
        elif how is Cadence.WRAPPED:
            self.kept_schedulers.append(key)
            self.notes.append(
                f"{key} is stepped by the scheduler it is handed to: left unprepared, as that "
                "scheduler decides when it steps"
            )
        else:
            schedulers.append(key)
            roles = lint_view(self.tree).roles
            where = roles.built_where(built) if roles is not None and built is not None else None
            loop = roles.counting_loop_of(step, where) if how is Cadence.PER_STEP and roles is not None else None
            if loop is not None:
                self._counted_schedulers[key] = loop

    def _prepare_inline(self, view, creation, built: Origin | None) -> bool:
        """``train_loader = cycle(DataLoader(...))`` (lucidrains' scripts), or a loader a training
        function builds for each epoch (the translation tutorial's ``train_epoch``): it has no
        name the scope could prepare, so it is prepared where it is built,
        ``cycle(accelerator.prepare(DataLoader(...)))``."""
        if built is None or built.kind is not Kind.DATALOADER or view.roles is None:
            return False
        function = self.tree.function_of(creation.stmt)
        inner = next((c for c in find_all(creation.value, cst.Call) if view.expression_at(c) is built.call), None)
        homes = [self.scope, self.accelerator_home, *self.init_helpers]
        if inner is None or (inner is creation.value and any(function is home for home in homes)):
            return False  # not built here, or built by name in the scope: prepared with the model
        if not view.roles.is_training_loader(built) or view.roles.shard_reason(built) is not None:
            return False
        self._need = f" to prepare the training DataLoader of {creation.key} (line {self.tree.line(inner)}, in {function_name(function)})"
        try:
            acc = self.accelerator_in(function)
        finally:
            self._need = None
        self.edits.on(inner, lambda updated: expression(f"{acc}.prepare({code(updated).strip()})", self.module))
        self.uses.append(creation.stmt)
        self.inline_loaders.append(creation.key)
        self.inline_origins.append(built)
        where = "" if function is self.scope else f" in {function_name(function)}"
        self.notes.append(
            f"the training DataLoader of {creation.key} (line {self.tree.line(inner)}{where}) is prepared where it is "
            "built, so each process takes its own share of the batches"
        )
        return True

    def _calls_into_scope(self, function: Function) -> bool:
        """Does ``function`` (transitively) call the training scope? A loader such a caller binds by
        name (``main()``: ``train_loader = DataLoader(...)``, then ``train(model, train_loader)``) is
        handed to the scope's loop, where :meth:`_handed_training_loaders` prepares it with the model:
        prepared inline instead, the caller would need the accelerator the scope creates."""
        scope = self.scope
        if not isinstance(scope, cst.FunctionDef) or function is scope:
            return False
        return function in self.graph.closure_of_callers({scope})

    def _handed_to_scope(self, creation: Creation, loaders: list[str]) -> bool:
        """Does the caller that binds ``creation`` hand it, by name, to a parameter of the scope that
        the scope prepares (one of ``loaders``)?"""
        function = self.tree.function_of(creation.stmt)
        scope = self.scope
        if not isinstance(scope, cst.FunctionDef):
            return False
        return any(
            node.value == creation.key and param in loaders
            for callee, call in self.graph.calls_from(function)
            if callee is scope
            for param, node in _names_handed(callee, call)
        )

    def _handed_loader(self, view, value: cst.BaseExpression, function: Function) -> Origin | None:
        """A DataLoader handed to the scope as a parameter (``self.train_loader = train_loader``
        in a trainer's ``__init__``, the loader built by ``main()``): prepared where it is kept,
        with the model and optimizer."""
        if not isinstance(value, cst.Name) or not self.tree.is_parameter(value.value, function):
            return None
        found = view.origin(value, callers=True)
        return found if found is not None and found.kind is Kind.DATALOADER else None

    def _loaders_of_unknown_origin(self, view, known: list[str]) -> list[str]:
        """Names the training loop iterates that the scope binds from a call we cannot see into
        (``train_dl, valid_dl = get_data()`` from another module) or unpacks from a local one:
        prepared too, so a DataLoader is sharded across processes; ``prepare()`` hands anything
        else back unchanged."""
        roles = view.roles
        if roles is None:
            return []
        scope_node = None if isinstance(self.scope, cst.Module) else view.statement_at(self.scope)
        home = self.accelerator_home
        home_node = view.statement_at(home) if home is not self.scope else scope_node
        found: list[str] = []
        for expr, where in roles.training_iterables():
            key = binding_key(expr)
            if key is None or key in known or key in found or key in self.sharded_loaders:
                continue
            bound = roles.bindings.lookup(expr, where)
            if bound is not None and (
                bound.where.function not in (scope_node, home_node)
                or _bar_over_unknown(roles, bound)
                or _bar_over_unprepared(roles, bound, known)
            ):
                # a name another method binds to what the scope keeps: the diffusion ScoreTrainer's
                # `progress_bar = tqdm(self.train_loader)` over `self.train_loader, self.val_loader
                # = self._create_data_loaders()` of its __init__; or a bar the scope builds each
                # epoch over a loader from a call it cannot see into (survey 22c's IDDM:
                # `train_pbar = tqdm(train_dataloader)`, `train_dataloader = get_sr_dataset(...)`):
                # the loader the bar wraps is what prepare() shards, not the bar
                kept = _kept_iterable(roles, bound, (scope_node, home_node))
                if kept is not None:
                    expr, where, bound = kept
                    key = binding_key(expr)
                    if key is None or key in known or key in found or key in self.sharded_loaders:
                        continue
            if bound is not None and bound.index is None:
                bound = _keyed_from_factory(roles, bound) or bound  # `loaders = get_loaders(cfg); loaders["train"]`
            # iterated in the scope, or in a training function that reads the scope's global
            # (cifar100's `train(epoch)` over the module-level `loader = get_loader(...)`)
            if (
                bound is None
                or not isinstance(bound.value, ast.Call)
                or (bound.where.function is not scope_node and bound.where.function is not home_node)
            ):
                continue  # a parameter, a literal, or bound elsewhere
            func = bound.value.func
            if isinstance(func, ast.Name) and func.id in _BUILTIN_NAMES and not roles.ctx.imports.imported(func.id):
                continue  # range(...), zip(...), list(...): never a loader
            if _counts_epochs(roles.ctx.imports, bound.value):
                continue  # trange(epochs), tqdm(range(epochs)): an epoch bar
            if self._bar_over_own_parameter(roles, bound.value, key):
                continue  # `train_loader = tqdm(train_loader)`: what the callers hand in decides
            if _sliced(bound.where.function or roles.ctx.tree, key):
                continue  # `order[begin : begin + bs]` under `range(0, len(order), bs)`: indices, not a loader
            if view.parsed is not None and never_a_loader(roles, bound, view.parsed):
                continue  # `rand_arch = sampler.sample()`, `torch.tensor(rand_arch).cuda()`: a list or a tensor
            if any(isinstance(roles.origin(arg, where), Origin) for arg in bound.value.args):
                continue  # tqdm(loader), a wrapper of an object the roles know: that object decides
            by_hand = roles.split_by_rank([*bound.value.args, *(kw.value for kw in bound.value.keywords)], where)
            if by_hand is not None:
                self.notes.append(f"{key} is {by_hand}: left unprepared, so every rank sees the batches it saw before")
                continue
            elsewhere = sharded_on_another_branch(self.tree, roles, expr, where, bound, self.distribution.by_hand)
            if elsewhere is not None:
                self.sharded_loaders.append(key)
                self.notes.append(elsewhere)
                continue
            origin = roles.origin(expr, where)
            if isinstance(origin, Origin) and origin.kind is Kind.DATALOADER:
                if roles.shard_reason(origin) is not None:
                    continue
                branch = roles.sharded_on_a_branch(expr, where)
                if branch is not None:  # a local factory's loader, sharded on its distributed branch
                    self.notes.append(
                        f"{key} is {branch} when {ast.unparse(bound.value.func)}() builds it for several processes: "
                        "left unprepared, so every rank sees the batches it saw before"
                    )
                    continue
                found.append(key)
            elif origin is None and roles.call_sharded_by_sampler(bound.value, bound.where):
                # PyG's `DataLoader(data, sampler=DistributedSampler(...))`: a torch DataLoader subclass
                self.sharded_loaders.append(key)
                self.notes.append(
                    f"{key} ({view.text(bound.value.func)}(), line {bound.value.lineno}) is given a "
                    "DistributedSampler, which gives each rank its own share already: left unprepared, so every "
                    "rank sees the batches it saw before (prepared, it would be sharded twice: each rank would see "
                    "1/N of its share)"
                )
            elif origin is None and (own := self._own_loader_class(view, bound.value.func)) is not None:
                self.notes.append(
                    f"{key} ({own}(), line {bound.value.lineno}) is the script's own batch source, not a DataLoader: "
                    "left unprepared (prepare() would hand it back as it is), so every process iterates all of its "
                    "batches; split it by accelerator.process_index by hand to give each process its share"
                )
            elif origin is None and (
                factory := sharded_by_factory(
                    self.tree,
                    roles.ctx.imports,
                    bound.value,
                    self.distribution.by_hand,
                    sampler_beside(roles.ctx.tree, bound.value),
                )
                or sharded_by_own_method(roles.ctx.tree, roles.ctx.imports, bound.value, self.tree.filename)
            ):
                self.sharded_loaders.append(key)
                self.notes.append(f"{key} (from {view.text(bound.value.func)}(), line {bound.value.lineno}) {factory}")
            elif origin is None:
                found.append(key)
                self.notes.append(
                    f"{key} (from {view.text(bound.value.func)}(), line {bound.value.lineno}) feeds the training loop: "
                    "prepared too, so a DataLoader is sharded across processes (prepare() returns anything else as it is)"
                )
        return found

    def _own_loader_class(self, view, func: ast.expr) -> str | None:
        """The name of the class ``func`` builds when its definition can be read (this file, or a
        project module it imports: airbench's ``CifarLoader``) and it does not derive from a
        DataLoader, or of the generator function of this file it calls (or of a function of the
        file that returns what one makes): the script's own batch source, which ``prepare()``
        does not split."""
        roles = view.roles
        if roles is None or view.parsed is None:
            return None
        found: ast.ClassDef | None = None
        if isinstance(func, ast.Name) and not roles.ctx.imports.imported(func.id):
            functions = {f.name: f for f in view.parsed.body if isinstance(f, ast.FunctionDef)}
            if func.id in functions and (
                is_generator(functions[func.id]) or returns_a_generator(functions[func.id], functions)
            ):
                return func.id  # `batches = get_batches(data, bs)`: prepare() hands a generator back unchanged
            found = next((c for c in view.parsed.body if isinstance(c, ast.ClassDef) and c.name == func.id), None)
        elif self.tree.filename is not None:
            qualname = roles.ctx.imports.qualname(func)
            if qualname and "." in qualname and is_project_module(qualname):
                module, name = qualname.rsplit(".", 1)
                parsed = load_local(importer_of(self.tree.filename), module)
                found = parsed.classes.get(name) if parsed is not None else None
        if found is None or any("DataLoader" in ast.unparse(base) for base in found.bases):
            return None
        return found.name

    def _iterated_parameters(self) -> list[str]:
        """Parameters of the training scope that its training loop iterates: ``for x, y in loader``
        or ``enumerate(loader)`` / ``tqdm(loader)`` (not ``range(steps)``)."""
        return list(self._iterated_parameter_nodes())

    def _iterated_parameter_nodes(self) -> dict[str, cst.Name]:
        """:meth:`_iterated_parameters`, each with the first name node the loop iterates."""
        view = lint_view(self.tree)
        if view.roles is None or not isinstance(self.scope, cst.FunctionDef):
            return {}
        trained = _trained_iterables(view.roles)
        found: dict[str, cst.Name] = {}
        for loop in find_all(self.scope, cst.For, enter_functions=False):
            it = _loop_source(loop)
            if not isinstance(it, cst.Name):
                continue
            name = it.value
            if name in trained and self.tree.is_parameter(name, self.scope) and name not in found:
                found[name] = it
        for name, node in self._parameters_handed_to_loops(trained).items():
            found.setdefault(name, node)
        return found

    def _bar_over_own_parameter(self, roles: TrainingRoles, value: ast.expr, key: str) -> bool:
        """``train_loader = tqdm(train_loader, ...)`` in the scope, over its own parameter of that name
        (LoRA-CLM's ``train()`` each epoch): not a loader built there but the one its callers hand in,
        prepared by :meth:`_handed_training_loaders` before the loop."""
        return (
            isinstance(self.scope, cst.FunctionDef)
            and isinstance(value, ast.Call)
            and roles.ctx.resolves_to(value.func, *ITERATION_WRAPPERS)
            and bool(value.args)
            and isinstance(value.args[0], ast.Name)
            and value.args[0].id == key
            and self.tree.is_parameter(key, self.scope)
        )

    def _through_own_bar(self, name: str) -> cst.Name | None:
        """The inner ``train_loader`` of the scope's ``train_loader = tqdm(train_loader, ...)``."""
        for assign in find_all(self.scope, cst.Assign, enter_functions=False):
            if self._own_bar(assign, name):
                assert isinstance(assign, cst.Assign) and isinstance(assign.value, cst.Call)
                inner = assign.value.args[0].value
                assert isinstance(inner, cst.Name)
                return inner
        return None

    def _own_bar(self, node: cst.CSTNode, key: str) -> bool:
        """``node`` is the scope's ``key = tqdm(key, ...)`` over its own parameter ``key``: the same
        loader in a progress bar, not a new one (no binding to prepare at)."""
        target = single_target(node) if isinstance(node, cst.Assign) else None
        value = target[1] if target is not None else None
        if target is None or target[0] != key or not isinstance(value, cst.Call) or not value.args:
            return False
        inner = value.args[0].value
        return (
            self.tree.resolves_to(value.func, *ITERATION_WRAPPERS)
            and isinstance(inner, cst.Name)
            and inner.value == key
            and isinstance(self.scope, cst.FunctionDef)
            and self.tree.is_parameter(key, self.scope)
        )

    def _parameters_handed_to_loops(self, trained: set[str | None]) -> dict[str, cst.Name]:
        """Parameters of the scope it hands, by name, to a function of this file whose loop iterates
        them (``train()`` calls ``train_one(model, optimizer, train_loader)``, whose loop is
        ``for batch in train_loader``; survey 26c's LoRA-CLM): each with its name node in that call."""
        assert isinstance(self.scope, cst.FunctionDef)
        found: dict[str, cst.Name] = {}
        for callee, call in self.graph.calls_from(self.scope):
            if self.tree.function_of(call) is not self.scope:
                continue
            looped = {key_of(_loop_source(loop)) for loop in find_all(callee, cst.For, enter_functions=False)}
            for param, node in _names_handed(callee, call):
                name = node.value
                if param in looped and param in trained and self.tree.is_parameter(name, self.scope):
                    found.setdefault(name, self._through_own_bar(name) or node)
        return found

    def _iterated_kept_parameters(self) -> list[tuple[str, str, str]]:
        """``(self.x, p, "Trainer.__init__")`` for each attribute a trainer's ``__init__`` keeps from its
        parameter ``p`` that a training method's loop iterates: ``for b in self.x`` (through
        ``enumerate``/``tqdm``) or ``it = iter(self.x)`` with ``next(it)`` in that loop. Its
        batches come from the callers of ``__init__``, not from the script's own code."""
        view = lint_view(self.tree)
        scope = self.scope
        cls = self.tree.class_of(scope) if isinstance(scope, cst.FunctionDef) else None
        init = init_of(cls) if cls is not None else None
        if view.roles is None or cls is None or init is None:
            return []
        kept = kept_parameters(self.tree, init)
        trained = _trained_iterables(view.roles)
        found: list[str | None] = []
        for method in methods_of(cls):
            if method is init or all(method is not f for f in self.training):
                continue
            iterators = {}  # `train_iter = iter(self.train_loader)`
            for assign in find_all(method, cst.Assign, enter_functions=False):
                target = single_target(assign)
                value = target[1] if target is not None else None
                if target is not None and isinstance(value, cst.Call) and key_of(value.func) == "iter" and value.args:
                    iterators[target[0]] = key_of(value.args[0].value)
            found += [iterators[key] for key in trained if key in iterators]
            looped = (key_of(_loop_source(loop)) for loop in find_all(method, cst.For, enter_functions=False))
            found += [key for key in looped if key in trained]
        where = f"{cls.name.value}.__init__"
        return [(key, kept[key], where) for key in dict.fromkeys(found) if key is not None and key in kept]

    def _unprepared_built_loaders(self) -> list[str]:
        """``DataLoader(...) at line N`` for each DataLoader of the file that a training loop
        iterates (through ``tqdm``, an attribute, a helper of ``__init__``) but that no prepare()
        of the conversion takes: its batches are a loader's, not the script's own code's."""
        view = lint_view(self.tree)
        roles = view.roles
        if roles is None:
            return []
        found: dict[int, str] = {}
        for expr, where in roles.training_iterables():
            origin = roles.origin(expr, where, callers=1)
            if isinstance(origin, Origin) and origin.kind is Kind.DATALOADER:
                found.setdefault(id(origin.built), f"{view.text(origin.built.func)}(...) at line {origin.built.lineno}")
        return list(found.values())

    def _handed_training_loaders(self, view, known: list[str]) -> dict[str, Origin]:
        """Parameters of the training function its loop iterates that its callers in this file
        pass a training DataLoader they build, not sharded (a seq2seq script's ``trainIters(encoder,
        decoder, dataloader, ...)`` called from ``__main__``): prepared with the model, which
        rebinds the function's own name only."""
        roles = view.roles
        if roles is None or self.accelerator_home is not self.scope or self.owner is not None:
            return {}
        found: dict[str, Origin] = {}
        for name, node in self._iterated_parameter_nodes().items():
            if name in known or name in self.sharded_loaders:
                continue
            expr = view.expression_at(node)
            # one call up: a loader kept on an object first (a Flower client's `self.loader`) stays noted
            built = roles.origin(expr, view.where(expr), callers=1) if expr is not None else None
            if not isinstance(built, Origin) or built.kind is not Kind.DATALOADER:
                continue
            if not roles.is_training_loader(built) or roles.shard_reason(built) is not None:
                continue
            found[name] = built
        return found

    def _built_elsewhere(self, model: str) -> str:
        """`` (built in __init__() at line 6)``: where a model the training scope only reads is
        bound, in the scope's class or at module level ("" when neither binds it)."""
        owner = self.tree.class_of(self.scope) if isinstance(self.scope, cst.FunctionDef) else None
        methods = methods_of(owner) if owner is not None else []
        places: list[Function] = [*methods, self.tree.module]
        for place in places:
            found = bindings(place, model)
            if found:
                where = function_name(place) if isinstance(place, cst.FunctionDef) else "module level"
                return f" (built in {where} at line {self.tree.line(found[0])})"
        return ""

    def _first_binding_order(self):
        def line(key: str) -> int:
            nodes = bindings(self.scope, key)
            return self.tree.line(nodes[0]) if nodes else 0

        return line

    # -- hand-made distribution -----------------------------------------------------------------
    def unwrap(self, attr: cst.Attribute, owner: str) -> None:
        """``model.module`` (and ``model.module if ddp else model``) -> the unwrapped model."""
        tree = self.tree
        acc = self.accelerator_in(tree.function_of(attr))
        node: cst.BaseExpression = attr
        parent = tree.parent(attr)
        if isinstance(parent, cst.IfExp) and parent.body is attr and key_of(parent.orelse) == owner:
            node = parent  # model.module if ddp else model
        value = expression(f"{acc}.unwrap_model({owner}, keep_torch_compile=False)", self.module)
        self.edits.on(node, lambda u: value.with_changes(lpar=u.lpar, rpar=u.rpar))
        self.uses.append(node)

    # -- hand compiles ------------------------------------------------------------------------
    def _remove_compiles(self, sites: list[CompileSite]) -> None:
        for site in sites:
            if site.alias is not None:
                alias = site.alias
                name = expression(site.key, self.module)
                self.edits.on(alias.value, replaced_by(name))
                self.compiled_aliases.append(alias)
                self.notes.append(
                    f"{code(alias.targets[0].target).strip()} = ... at line {self.tree.line(alias)} named the compiled "
                    f"{site.key}: now {site.key} itself, which prepare() compiles (and wraps for several processes); "
                    f"{site.key}'s checkpoints are saved from the unwrapped model"
                )
                continue
            self.remove_hand_compile(site.remove, site.call, site.origin)
        outside = [
            c
            for c in find_all(self.tree.module, cst.Call)
            if self.tree.resolves_to(c.func, *torch_api.TORCH_COMPILE)
            and not self.is_removed(c)
            and not self.tree.contains(self.scope, c)
            and not self.tree.contains(self.accelerator_home, c)
            and not any(self.tree.contains(helper, c) for helper in self.init_helpers)
            and not any(self.tree.contains(factory, c) for factory, _ in self.init_factories)
        ]
        leftover = [c for c in outside if isinstance(self.tree.parent(c), cst.Assign)]
        for call in outside:  # `compiled = torch.compile(model)` or `return torch.compile(model)` in a helper
            taken = self._model_from_compiling_helper(self.tree.function_of(call))
            if taken is not None:
                model, assign = taken
                raise Refusal(
                    f"{model} = {helper_name(assign)}(...) at line {self.tree.line(assign)} takes the model "
                    f"compiled by hand in that helper (torch.compile at line {self.tree.line(call)}), a compile the "
                    "conversion cannot move into the plugin: prepare() would wrap the compiled model, and on several "
                    "processes accelerator.unwrap_model() hands back the compile wrapper (`_orig_mod.` keys in what is "
                    "saved from it); remove that compile (the plugin compiles the model) and convert again"
                )
        for call in leftover:
            self.notes.append(
                f"torch.compile at line {self.tree.line(call)} is outside {function_name(self.scope)} and was left as is"
            )

    def _model_from_compiling_helper(self, helper: Function) -> tuple[str, cst.Assign] | None:
        """``model, on, why = maybe_compile_model(model, ...)`` in the scope: a model to prepare bound
        to what ``helper`` (a local function with a ``torch.compile`` of its own) returns (survey26d
        room_baseline)."""
        if not isinstance(helper, cst.FunctionDef):
            return None
        for assign in find_all(self.scope, cst.Assign, enter_functions=False):
            if not isinstance(assign.value, cst.Call) or self.tree.function_named(assign.value) is not helper:
                continue
            for target in assign.targets:
                names = (
                    [e.value for e in target.target.elements]
                    if isinstance(target.target, (cst.Tuple, cst.List))
                    else [target.target]
                )
                for name in names:
                    if key_of(name) in self.models:
                        return key_of(name) or "", assign
        return None

    def _regional_reason(self) -> str | None:
        # `ddp_model = DDP(model)`: prepare() compiles the model the wrap takes
        for model in [*self.models, *self._wrap_inputs()]:
            homes = [self.accelerator_home, *self.init_helpers]
            for node in bindings(self.scope, model) or [n for home in homes for n in bindings(home, model)]:
                if isinstance(node, cst.Assign) and not self.is_removed(node):
                    reason = repeated_blocks(self.tree, node.value)
                    if reason and self.method_loss is not None:
                        self.notes.append(regional_left_off(self.method_loss, reason))
                        return None
                    if reason:
                        return reason
        return None

    # -- rewrites -------------------------------------------------------------------------------
    def reach(self) -> list[Function]:
        """Functions whose code runs with the accelerator: the scope, what it calls to train,
        functions nested in it, and (for a Trainer class) the class's training methods."""
        tree = self.tree
        reach: list[Function] = [self.scope]
        frontier: list[Function] = [self.scope]
        while frontier:
            current = frontier.pop()
            for callee, _ in self.graph.calls_from(current):
                if callee in self.training and all(callee is not r for r in reach):
                    reach.append(callee)
                    frontier.append(callee)
        for function in find_all(tree.module, cst.FunctionDef):
            if any(f is self.scope for f in tree.enclosing_functions(function)) and all(
                function is not r for r in reach
            ):
                reach.append(function)
        for method in self.owner_methods():
            if method in self.training and all(method is not r for r in reach):
                reach.append(method)
        if isinstance(self.scope, cst.Module) or self.global_accelerator:
            reach += [
                f
                for f in find_all(tree.module, cst.FunctionDef)
                if f in self.training and all(f is not r for r in reach)
            ]
        return reach

    def _rewrites(self, backwards: list[cst.Call]) -> None:
        tree = self.tree
        reach = self.reach()
        self.backwards = 0
        dead: dict[cst.FunctionDef, list[cst.Call]] = {}
        for call in backwards:
            if self.is_removed(call):
                continue
            if all(tree.function_of(call) is not r for r in reach):
                holder = tree.function_of(call)
                if isinstance(holder, cst.FunctionDef) and _called_nowhere(tree, holder):
                    dead.setdefault(holder, []).append(call)  # it never runs: left as it is
                    continue
                raise Refusal(
                    f"the backward() at line {tree.line(call)} runs outside the code that trains the model built in "
                    f"{function_name(self.scope)}{unknown_optimizer_of(tree, holder)}; convert by hand"
                )
            self.rewrite_backward(call)
            self.backwards += 1
        for holder, calls in dead.items():
            lines = ", ".join(str(tree.line(c)) for c in calls)
            self.notes.append(
                f"{holder.name.value}() at line {tree.line(holder)} is called nowhere in this file: left as it is, "
                f"its backward() at line{'s' if len(calls) > 1 else ''} {lines} not converted (a script that imports "
                "it, or a call added later, would run it outside the accelerator)"
            )
        clip_through_accelerator(self, reach, len(self.optimizers))
        self.cudas = self.devices = 0
        device_key = "self.device" if self.owner is not None else "device"
        # evaluation and sampling code the scope calls uses the prepared model too: its .cuda() calls
        # follow the accelerator's device, as RC403 asks (with the functions nested in it)
        for place in places_using_prepared(self):
            if all(place is not r for r in reach) and not isinstance(place, cst.Module):
                if self.can_reach_accelerator(place):
                    reach += [place, *(f for f in find_all(place, cst.FunctionDef) if f is not place)]
        reach += [m for m in self._dataset_item_methods() if all(m is not r for r in reach)]
        if isinstance(self.scope, cst.Module):
            for method, calls in own_batch_methods(tree):  # `train_loader.next_batch()`'s "cuda"
                self.batch_method_calls[id(method)] = calls
                if all(method is not r for r in reach):
                    reach.append(method)
        self.assigned_device_keys = {key for function in reach for key in assigned_device_keys(tree, function)}
        self.model_gpu_choices = model_gpu_choices(tree, set(self.models))
        home = self.accelerator_home
        for place in [home, *self.init_helpers]:  # a trainer's __init__, where its Accelerator is made
            if all(place is not r for r in reach):
                reach.append(place)
                self.assigned_device_keys |= assigned_device_keys(tree, place)
        for function in reach:
            own = function is self.scope or function is home or any(function is h for h in self.init_helpers)
            cudas, devices = self.device_and_cuda_rewrites(function, device_key if own else "device")
            self.cudas += cudas
            self.devices += devices
        keep_cpu_load_locations(self, reach)
        name_device_helpers(self)
        drop_set_device_of_rewritten(self)
        guard_fixed_set_device(self, home)
        self._checkpoint_rewrites()

    def _dataset_item_methods(self) -> list[cst.FunctionDef]:
        """``__getitem__`` (and ``__iter__``) of the script's own datasets, in a module-level
        script: lucidrains' enwik8 trainers return ``full_seq.cuda()`` from them, which means GPU 0
        in every process. They read items long after the module-level ``accelerator`` exists, so
        their placements follow ``accelerator.device`` like the training code's (the prepared
        loader leaves a batch already there in place; an unprepared one, or a direct
        ``dataset[i]``, gets it on its process's device as before on one GPU)."""
        if not isinstance(self.scope, cst.Module):
            return []
        found: list[cst.FunctionDef] = []
        body = self.tree.module.body
        for stmt in body:
            if isinstance(stmt, cst.ClassDef) and any(
                self.tree.resolves_to(base.value, *torch_api.DATASETS) for base in stmt.bases
            ):
                if self._item_read_at_module_level(stmt):
                    continue  # `x = dataset[0]` may run before the accelerator exists
                found += [m for m in methods_of(stmt) if m.name.value in torch_api.DATASET_ITEM_METHODS]
        return found

    def _item_read_at_module_level(self, cls: cst.ClassDef) -> bool:
        """An instance of ``cls`` is indexed by a module-level statement outside any loop."""
        instances = module_instances(self.tree, {cls.name.value})
        return any(
            isinstance(sub.value, cst.Name) and sub.value.value in instances
            for stmt in self.tree.module.body
            if isinstance(stmt, cst.SimpleStatementLine)
            for sub in find_all(stmt, cst.Subscript)
        )

    def _checkpoint_rewrites(self) -> None:
        """``model.state_dict()`` -> from the unwrapped model, so no ``_orig_mod.``/``module.``
        prefixes reach checkpoints (RC404); ``torch.save`` of it -> ``accelerator.save`` (once per
        machine). The matching ``model.load_state_dict(...)`` loads into the unwrapped model too, so
        a checkpoint saved with clean keys resumes (prepared optimizers and schedulers load their own)."""
        tree = self.tree
        places: list[Function] = [self.scope, *(m for m in self.owner_methods() if m is not self.scope)]
        places += [p for p in places_using_prepared(self) if all(p is not q for q in places)]
        models = set(self.models)
        self.checkpoint_saves = self.checkpoint_loads = 0
        self.saved_states: set[str] = set()  # the models whose state_dict() the script saves
        self.whole_model_saves: list[int] = []
        writes: list[tuple[Function, cst.Call]] = []  # now written from the main process only
        for place in places:
            for call in find_all(place, cst.Call, enter_functions=False):
                func = call.func
                whole = self._whole_model_saved(call, models)
                if whole is not None:
                    if self._save_whole_model(place, call, whole):
                        writes.append((place, call))
                    continue
                if not (
                    isinstance(func, cst.Attribute)
                    and func.attr.value in ("state_dict", "load_state_dict")
                    and key_of(func.value) in models
                ):
                    continue
                model = key_of(func.value)
                assert model is not None
                again = self.recreated_at(model) if place is self.scope else None
                if again is not None and tree.line(call) > again:
                    continue  # the model built again after training: a plain module, not the prepared one
                if (
                    place is not self.scope
                    and place not in self.owner_methods()
                    and not sees_prepared(place, model, self)
                ):
                    continue
                if not self.can_reach_accelerator(place):
                    self.notes.append(
                        f"{model}.{func.attr.value}() at line {tree.line(call)} is left as is: no accelerator in reach "
                        f"there; save and load through accelerator.unwrap_model({model}, keep_torch_compile=False)"
                    )
                    continue
                acc = self.accelerator_in(place)
                value = expression(f"{acc}.unwrap_model({model}, keep_torch_compile=False)", self.module)
                self.edits.on(func.value, replaced_by(value))
                self.uses.append(call)
                if func.attr.value == "load_state_dict":
                    self.checkpoint_loads += 1
                    self._strip_wrapper_prefix(call)
                    continue
                for save in state_saves(tree, place, call):
                    if saves_into_memory(self, save):
                        continue
                    write_on_main_process(self, place, save)
                    writes.append((place, save))
                self.checkpoint_saves += 1
                if not taken_unwrapped(tree, call, model):  # `else: save(model.state_dict())` of an isinstance test
                    self.saved_states.add(model)
        self._copy_unwrapped(places, models)
        main = [p for p in places if p is self.scope or p in self.owner_methods()]
        writes += save_wrapper_states_once(self, [p for p in places if p not in main])
        writes += guard_helper_saves(self, places, self.training)
        owned = [p for p in places if p in main or p in self.training]
        writes += save_the_rest_once(self, owned, writes)
        writes += guard_object_saves(self, places)
        writes += move_written_files_once(self, writes)
        wait_before_reading_back(self, writes)
        wait_before_returning(self, writes, self.training)
        write_files_once(self, places)
        ask_once(self, places, self.training)

    def _copy_unwrapped(self, places: list[Function], models: set[str]) -> None:
        """``deepcopy(model)`` after training started copies the unwrapped model
        (:func:`~regcomp_lint.codemod.model_copies.copies_after_training`): in the scope after its
        first training step, in a training function anywhere."""
        tree = self.tree
        _, steps = self.training_steps()
        first_step = min((tree.line(s) for s in steps if tree.function_of(s) is self.scope), default=None)
        for place in places:
            if place is self.scope:
                if first_step is None:
                    continue
                after = first_step
            elif place in self.training:
                after = 0
            else:
                continue
            if not self.can_reach_accelerator(place):
                continue
            for call in copies_after_training(tree, place, models, after):
                model = key_of(call.args[0].value)
                if model is None or (place is not self.scope and not sees_prepared(place, model, self)):
                    continue
                again = self.recreated_at(model) if place is self.scope else None
                if again is not None and tree.line(call) > again:
                    continue  # the model built again after training: a plain module
                acc = self.accelerator_in(place)
                unwrapped = expression(f"{acc}.unwrap_model({model}, keep_torch_compile=False)", self.module)
                self.edits.on(call.args[0].value, replaced_by(unwrapped))
                self.uses.append(call)
                self.notes.append(
                    f"deepcopy({model}) at line {tree.line(call)} copies {acc}.unwrap_model({model}, "
                    "keep_torch_compile=False): a copy of the prepared model is its compile wrapper (around DDP on "
                    "several processes), whose weights save with `_orig_mod.` keys no plain model loads"
                )

    def _strip_wrapper_prefix(self, load: cst.Call) -> None:
        """``model.load_state_dict(sd, strict=False)`` after the script's DataParallel/DDP wrap:
        checkpoints the original wrote there have ``module.``-prefixed keys, and the unwrapped
        model the conversion loads into would skip every one of them without a word (strict=False),
        training on from random weights. The keys lose a leading ``module.`` on the way in, so old
        checkpoints and the converted script's clean ones both load."""
        wraps = self.distribution.data_parallel
        strict = next((a for a in load.args if a.keyword is not None and a.keyword.value == "strict"), None)
        if (
            not wraps
            or not load.args
            or load.args[0].keyword is not None
            or strict is None
            or not (isinstance(strict.value, cst.Name) and strict.value.value == "False")
            or self.tree.line(load) < min(self.tree.line(w) for w in wraps)
        ):
            return
        first = load.args[0]
        text = code(first.value).strip()
        value = expression(f'{{k.removeprefix("module."): v for k, v in {text}.items()}}', self.module)
        self.edits.on(first, partial(cst.Arg.with_changes, value=value))
        self.notes.append(
            f"load_state_dict(..., strict=False) at line {self.tree.line(load)} loads keys without their `module.` "
            "prefix: checkpoints the original saved from its wrapped model still load (with strict=False they "
            "would have been skipped without a word)"
        )

    def _whole_model_saved(self, call: cst.Call, models: set[str]) -> str | None:
        """The model ``torch.save(model, path)`` pickles whole, when it is a prepared one."""
        view = lint_view(self.tree)
        save = view.roles.checkpoints.save_at(view.expression_at(call)) if view.roles is not None else None
        if save is None or not save.torch_save or not call.args:
            return None
        key = key_of(call.args[0].value)
        return key if key in models else None

    def _save_whole_model(self, place: Function, call: cst.Call, model: str) -> bool:
        """``torch.save(model, path)`` -> ``accelerator.save(accelerator.unwrap_model(model, ...), path)``:
        the prepared model is a DDP or compiled wrapper (pickled, it loads only where a process group
        runs, or with ``_orig_mod.`` keys), and every process would write the file."""
        tree = self.tree
        if place is not self.scope and place not in self.owner_methods() and not sees_prepared(place, model, self):
            return False
        if not self.can_reach_accelerator(place):
            self.notes.append(
                f"torch.save({model}, ...) at line {tree.line(call)} is left as is: no accelerator in reach there; "
                f"save accelerator.unwrap_model({model}, keep_torch_compile=False) instead"
            )
            return False
        acc = self.accelerator_in(place)
        in_memory = saves_into_memory(self, call)
        if not in_memory:
            write_on_main_process(self, place, call)
        unwrapped = expression(f"{acc}.unwrap_model({model}, keep_torch_compile=False)", self.module)
        self.edits.on(call.args[0].value, replaced_by(unwrapped))
        self.uses.append(call)
        self.whole_model_saves.append(tree.line(call))
        return not in_memory

    def owner_methods(self) -> list[cst.FunctionDef]:
        """The methods of the trainer class the conversion works in (none for plain functions)."""
        if self.owner is None:
            return []
        return methods_of(self.owner)

    # -- placing the accelerator and prepare ----------------------------------------------------
    def _place(self, settings: dict[str, Setting], script: ScriptSettings) -> None:
        tree = self.tree
        scope_block: Block = tree.body_of(self.scope)
        prepared = self.models + self.optimizers + self.loaders + self.schedulers
        backwards_here, steps = self.training_steps()
        created = [n for key in prepared + self.kept_schedulers for n in self._creations_for_training(key, steps)]
        rebuilt = self._rebuilt_optimizers(steps)
        # `model = train_model(model, ...)` binds what the training returns, not a new object to prepare
        created = [n for n in created if n not in rebuilt and not any(tree.contains(n, step) for step in steps)]
        block = self.descend(scope_block, [*created, *steps]) if created else scope_block
        last, first_step = self._setup_and_first_step(block, created, steps)
        per_pass = None
        holder = block.body[last] if first_step is not None and first_step == last else None
        if isinstance(holder, (cst.For, cst.While)) and self._rebuilt_each_pass(holder, created, steps, prepared):
            # Kaggle's `for fold in range(n_fold): model = ...; optimizer = ...; run_training(...)`
            per_pass = holder
            assert isinstance(holder.body, cst.IndentedBlock)  # _rebuilt_each_pass checked it
            block = self.descend(holder.body, [n for n in [*created, *steps] if tree.contains(holder, n)])
            last, first_step = self._setup_and_first_step(block, created, steps)
        if (
            isinstance(holder, (cst.If, cst.With))
            and isinstance(holder.body, cst.IndentedBlock)
            and self._trains_only_under(holder, created, steps)
        ):
            # `model = ...` first, then `if not args.eval_only: optimizer = ...; loader = ...; train`:
            # prepared in that branch, after its objects (the other path uses the model as it is);
            # `with wandb.init(...) as run: model = compile(model); train(...)` (survey26d): a with's
            # body runs once, in order, so prepare() goes there too
            block = self.descend(holder.body, [n for n in [*created, *steps] if tree.contains(holder, n)])
            last, first_step = self._setup_and_first_step(block, created, steps)
        runs = None
        if first_step is not None and last >= first_step:
            runs = self._runs_in_sequence(block, created, steps, prepared)
        if runs is None and first_step is not None and last >= first_step:
            late = max(created, key=lambda n: tree.line(n))
            early = min((n for n in steps if self.project(block, n) == first_step), key=tree.line)
            what = (
                "a backward pass" if early in backwards_here else f"a call into the training code ({code(early.func)})"
            )
            late_key = next(
                (k for k in prepared + self.kept_schedulers if late in bindings(self.scope, k)), "an object"
            )
            holder = block.body[first_step]
            if first_step == last and isinstance(holder, (cst.For, cst.While)):
                # Kaggle's `for fold in range(n_fold): model = ...; optimizer = ...; run_training(...)`
                anew = [
                    k
                    for k in prepared + self.kept_schedulers
                    if any(tree.contains(holder, n) for n in created if n in bindings(self.scope, k))
                ]
                raise Refusal(
                    f"{_names(anew) or 'the objects to prepare'} {'is' if len(anew) == 1 else 'are'} built anew in "
                    f"each pass of the loop at line {tree.line(holder)} (folds, repeated runs or a rebuilt "
                    "optimizer), and trained there: one prepare() cannot serve every pass; convert by hand, "
                    "preparing each pass's objects inside the loop"
                )
            if tree.line(early) > tree.line(late):  # built before the training, in the same compound statement
                raise Refusal(
                    f"{what} at line {tree.line(early)} and the last object to prepare ({late_key}, line "
                    f"{tree.line(late)}) share the statement at line {tree.line(holder)}, and training runs on more "
                    "than one of its paths: no single place for prepare() comes before the training on every path; "
                    "convert by hand"
                )
            again = [n for n in steps if tree.line(n) > tree.line(late)]
            if again:  # the transfer-learning tutorial: train_model(model_ft, ...), then train_model(model_conv, ...)
                second = min(again, key=tree.line)
                between = [
                    k
                    for k in prepared + self.kept_schedulers
                    if any(tree.line(early) < tree.line(n) < tree.line(second) for n in bindings(self.scope, k))
                ]
                late_key = ", ".join(dict.fromkeys(between)) or late_key
                raise Refusal(
                    f"the script trains more than once: {what} at line {tree.line(early)}, then again at line "
                    f"{tree.line(second)} with objects built in between ({late_key}); one prepare() cannot serve "
                    "both runs: convert by hand, preparing each run's objects before it"
                )
            raise Refusal(
                f"{what} runs at line {tree.line(early)}, before the last object to prepare ({late_key}, line "
                f"{tree.line(late)}) is created; create model, optimizer and data loaders before training starts"
            )
        if runs is not None:
            # the transfer-learning tutorial: train_model(model_ft, ...), then train_model(model_conv, ...)
            runs = [(self._after_model_setup(block, at - 1, step, keys) + 1, keys, step) for at, keys, step in runs]
            last = runs[0][0] - 1
            self.prepared_at = {k: at for at, keys, _ in reversed(runs) for k in keys}
        else:
            last = self._after_model_setup(block, last, first_step, prepared)
        prepare_index = last + 1
        guarded: list[tuple[cst.If, list[str]]] = []
        if runs is None:
            guarded = refuse_unbound_at_prepare(tree, self.scope, block, prepare_index, prepared)
            self.notes += listed_loader_notes(tree, block, prepare_index, self.loaders)
        for alias in self.compiled_aliases:
            if key_of(alias.targets[0].target) in self.wrap_inputs:
                continue  # read only by the wrap, which names the prepared model once prepare() runs
            at = self.project(block, alias)
            if at is None or at < prepare_index:
                raise Refusal(
                    f"{code(alias.targets[0].target).strip()} = torch.compile(...) at line {tree.line(alias)} names the "
                    "compiled model before the last object to prepare exists: after conversion it would name the "
                    "plain, unprepared model; move it after the optimizer, loaders and scheduler are built"
                )
        indent = self.indentation_of(block)
        acc = self.acc_key
        for assign in rebuilt:
            self.edits.on(
                assign.value, lambda updated: expression(f"{acc}.prepare({code(updated).strip()})", self.module)
            )
            self.notes.append(
                f"{code(assign.targets[0].target).strip()} is built again at line {tree.line(assign)}, inside the "
                f"training loop (a learning-rate decay by a new optimizer): prepared there too, as {acc}.prepare(...)"
            )

        def prepare_call(keys: list[str]) -> cst.BaseStatement:
            """``<targets> = accelerator.prepare(<args>)`` for ``keys`` (the method-loss wrapper
            in its model's place, placement keywords where some object must not be moved)."""
            targets_of, args_of = prepared_as(self.method_loss, keys)
            placed = args_of + placement_keyword(self, keys, frozenset(host_batch_loaders(self, keys)))
            return call_statement(f"{', '.join(targets_of)} = ", f"{acc}.prepare", placed, self.module, indent)

        if runs is not None:
            prepared = list(dict.fromkeys(k for _, keys, _ in runs for k in keys))
            prepare = prepare_call(runs[0][1])
        else:
            held = {k for _, keys in guarded for k in keys}
            prepare = prepare_call([k for k in prepared if k not in held])
        extra = [guarded_prepare(holder, prepare_call(keys), self.module) for holder, keys in guarded]
        for holder, keys in guarded:
            self.notes.append(
                f"{_names(keys)} {'is' if len(keys) == 1 else 'are'} built only when {code(holder.test).strip()} "
                f"(line {tree.line(holder)}): prepared under the same test, right after the other objects"
            )
        read_through_wrapper(self, block, prepare_index)
        reach_own_methods(self, block, prepare_index)
        unwrap_for_other_modules(self, block, prepare_index)
        unwrap_returned_models(self, block, prepare_index)
        sync_reinitialised(self, block, prepare_index)
        self._place_accelerator(settings, script, block, prepare_index)
        if per_pass is not None:
            release = statement(f"{acc}.free_memory()", self.module)
            self.edits.add_statements(block, prepare_index, [release, prepare], after=True)
            self.notes.append(
                f"{_names(prepared)} {'is' if len(prepared) == 1 else 'are'} built anew in each pass of the loop at "
                f"line {tree.line(per_pass)} (folds or repeated runs): prepared in each pass, after "
                f"{acc}.free_memory() lets the Accelerator drop the previous pass's objects"
            )
        else:
            self.edits.add_statements(block, prepare_index, [prepare, *extra], after=True)
        for at, keys, _step in (runs or [])[1:]:
            self.edits.add_statements(block, at, [prepare_call(keys)], after=True)
        if runs is not None:
            lines = ", ".join(str(tree.line(block.body[step])) for _, _, step in runs)
            self.notes.append(
                f"the script trains {len(runs)} times in sequence (lines {lines}), each run with objects of its own: "
                "each run's objects are prepared just before it"
            )
        self.prepared = prepared

    def _runs_in_sequence(
        self, block: Block, created: list[cst.CSTNode], steps: list[cst.Call], prepared: list[str]
    ) -> list[tuple[int, list[str], int]] | None:
        """The script's training runs one after the other in ``block``, each on objects built just
        before it (the transfer-learning tutorial trains ``model_ft``, then builds and trains
        ``model_conv``): per run, the index its ``prepare()`` goes to, the keys it prepares and the
        index of its first training statement. None unless every creation and step is a statement
        of ``block`` of its own and each run prepares something."""
        step_at = sorted({self.project(block, s) for s in steps}, key=lambda i: -1 if i is None else i)
        if not step_at or step_at[0] is None:
            return None
        made: list[tuple[int, str]] = []
        for key in prepared + self.kept_schedulers:
            bound = bindings(self.scope, key)
            for node in created:
                if node in bound:
                    index = self.project(block, node)
                    if index is None or index in step_at:
                        return None  # built inside a training statement
                    made.append((index, key))
        runs: list[tuple[int, list[str], int]] = []
        previous = -1
        for step in step_at:
            assert step is not None
            pending = [(i, k) for i, k in made if previous < i < step]
            keys = [k for k in prepared if any(k == key for _, key in pending)]
            if pending and keys:
                runs.append((max(i for i, _ in pending) + 1, keys, step))
            elif pending or not runs:
                return None
            previous = step
        if len(runs) < 2 or {k for _, keys, _ in runs for k in keys} != set(prepared):
            return None
        return runs

    def _setup_and_first_step(
        self, block: Block, created: list[cst.CSTNode], steps: list[cst.Call]
    ) -> tuple[int, int | None]:
        """In ``block``: the index of the statement that creates the last object to prepare (-1:
        none), and of the first that trains (None: none)."""
        last = max((i for i in (self.project(block, n) for n in created) if i is not None), default=-1)
        first_step = min((i for i in (self.project(block, n) for n in steps) if i is not None), default=None)
        return last, first_step

    def _trains_only_under(self, holder: cst.If | cst.With, created: list[cst.CSTNode], steps: list[cst.Call]) -> bool:
        """Every training step, and every object to prepare that ``holder`` builds, is in the body
        of ``holder`` (an ``if``, not its ``else``; or a ``with``), and the body trains after building them."""
        tree = self.tree
        body = holder.body
        if not isinstance(body, cst.IndentedBlock) or not steps or not all(tree.contains(body, s) for s in steps):
            return False
        inside = [n for n in created if tree.contains(holder, n)]
        if not inside or not all(tree.contains(body, n) for n in inside):
            return False
        last, first_step = self._setup_and_first_step(self.descend(body, [*inside, *steps]), inside, steps)
        return first_step is not None and last < first_step

    def _rebuilt_each_pass(
        self, holder: cst.CSTNode, created: list[cst.CSTNode], steps: list[cst.Call], prepared: list[str]
    ) -> bool:
        """``holder`` is a loop that builds every object to prepare again in each pass and trains
        them there, and all training happens in it (k-fold cross-validation, repeated runs): each
        pass's objects can be prepared in that pass."""
        if not isinstance(holder, (cst.For, cst.While)) or not isinstance(holder.body, cst.IndentedBlock):
            return False
        tree = self.tree
        if not all(tree.contains(holder, step) for step in steps):
            return False
        inside = [n for n in created if tree.contains(holder, n)]
        return all(any(n in bound for n in inside) for bound in (bindings(self.scope, key) for key in prepared))

    def _after_model_setup(self, block: Block, last: int, first_step: int | None, prepared: list[str]) -> int:
        """Past the model's own set-up calls that follow the last object to prepare
        (``model.reset()``, ``model.init_whiten(batch)`` after the optimizers, airbench): DDP
        broadcasts process 0's weights once, when prepare() wraps the model, so weights drawn
        after it would differ between processes. When something in between already holds a
        prepared object (``optimizers = [opt1, opt2]``), prepare() cannot move past it: refused,
        naming the call."""
        end = first_step if first_step is not None else len(block.body)
        models = set(self.models)
        copies = [last + 1 + i for i in sorted(model_copies(self.tree, list(block.body[last + 1 : end]), models))]
        alias_of = {
            last + 1 + i: a for i, a in plain_aliases(self.tree, list(block.body[last + 1 : end]), models).items()
        }
        aliases = sorted(alias_of)
        told = {i: found for i in range(last + 1, end) if (found := tells_ddp(block.body[i], models)) is not None}
        setup = [
            i
            for i in range(last + 1, end)
            if i in copies
            or i in aliases
            or i in told
            or self._model_setup_call(block.body[i], models)
            or reinitialised_model(self, block.body[i]) is not None
        ]
        if not setup:
            return last
        for i, (setting, node) in told.items():
            prefixed = compile_prefixed(block.body[i])
            if prefixed is not None:
                raise Refusal(
                    f"{setting} at line {self.tree.line(node)} names what DDP must leave alone with torch.compile's "
                    f"{prefixed.value} prefix (line {self.tree.line(prefixed)}), the compiled module's names: "
                    "prepare() wraps the uncompiled model in DDP and compiles after, so those names match nothing "
                    "and DDP would sync what the script told it to skip (convert by hand: name them without the prefix)"
                )
        loads: list[cst.Call] = []
        for i in range(last + 1, setup[-1] + 1):
            # an `if compile:` block taking the plain name is passed: what else it does, it must not keep
            if i in setup and not (i in alias_of and isinstance(block.body[i], cst.If)):
                continue
            removed = [w for model in models for w in model_wraps(self.tree, block.body[i], model)]
            removed += [alias_of[i]] if i in alias_of else []
            held = held_objects(block.body[i], set(prepared), removed)  # `optimizers = [opt1, opt2]` keeps them
            loads += held.loads
            flagged = told_of_the_wrap(self.tree, block.body[i], self.distribution.data_parallel, models)
            if flagged is not None:
                stmt = block.body[setup[-1]]
                raise Refusal(
                    f"{code(flagged.call.func)}(...) at line {self.tree.line(flagged.call)} is handed {flagged.model} and "
                    f"{flagged.flag}, which decided whether {code(flagged.wrap.func)}(...) at line "
                    f"{self.tree.line(flagged.wrap)} wrapped it: converted, it runs before prepare() (which must follow "
                    f"{_source(stmt)} at line {self.tree.line(stmt)}), so it gets the plain module while told "
                    f"{flagged.flag}; code there that adds or strips `module.` by that flag would no longer match the "
                    "model (convert by hand)"
                )
            if held.keeps and i == setup[-1]:  # the `if compile:` block itself: it also keeps one
                stmt = block.body[i]
                raise Refusal(
                    f"{_source(stmt)} at line {self.tree.line(stmt)} takes a plain name for the model, so prepare() "
                    "must follow it, and it also keeps an object to prepare, which after prepare() would stay the "
                    "plain one; convert by hand"
                )
            if held.keeps:
                stmt = block.body[setup[-1]]
                raise Refusal(
                    f"{_source(stmt)} at line {self.tree.line(stmt)} changes the model after the objects to "
                    f"prepare exist, and line {self.tree.line(block.body[i])} already uses them: prepare() must come "
                    "after the model's last change (DDP copies process 0's weights only then); move that call "
                    "before the optimizer is built"
                )
        if loads:
            calls = ", ".join(f"{code(c.func)}(...) at line {self.tree.line(c)}" for c in loads)
            self.notes.append(
                f"{calls} loads into the objects to prepare before prepare(), which follows the model's last "
                "change: what it returns is taken, by its name, not to be one of them"
            )
        if told:
            calls = ", ".join(f"{found} (line {self.tree.line(node)})" for found, node in told.values())
            self.notes.append(
                f"prepare() follows {calls}: DDP reads what it must leave alone when it wraps the model, which "
                "prepare() now does; after it, the setting would change nothing"
            )
        changes = [i for i in setup if i not in copies and i not in aliases and i not in told]
        if changes:
            calls = ", ".join(f"{_source(block.body[i])} (line {self.tree.line(block.body[i])})" for i in changes)
            self.notes.append(
                f"prepare() follows {calls}: the model is changed there, and DDP copies process 0's weights only "
                "when prepare() wraps it"
            )
        if copies:
            calls = ", ".join(f"{_source(block.body[i])} (line {self.tree.line(block.body[i])})" for i in copies)
            self.notes.append(
                f"prepare() follows {calls}: a copy of the model (an average) is made of the plain module; made of "
                "the prepared model it would be a DDP or compile wrapper"
            )
        if aliases:
            calls = ", ".join(f"{_source(block.body[i])} (line {self.tree.line(block.body[i])})" for i in aliases)
            self.notes.append(
                f"prepare() follows {calls}: the script names the plain module there, before it compiles or wraps "
                "the model; after prepare() that name would be the prepared model (a DDP or compile wrapper)"
            )
        return setup[-1]

    @staticmethod
    def _model_setup_call(stmt: cst.CSTNode, models: set[str]) -> bool:
        """``model.reset()`` / ``model.init_whiten(x)`` as a statement: a method of the model's own
        (not ``train()``/``eval()``/``to()``..., nor a save such as ``save_pretrained``, which
        only reads it) called on it, for its effect."""
        if not (
            isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1 and isinstance(stmt.body[0], cst.Expr)
        ):
            return False
        call = stmt.body[0].value
        if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Attribute):
            return False
        method = call.func.attr.value
        root = call.func.value
        while isinstance(root, cst.Attribute):
            root = root.value
        return (
            (key_of(call.func.value) in models or (isinstance(root, cst.Name) and root.value in models))
            and method not in torch_api.MODULE_ONLY_METHODS
            and method not in torch_api.PLACEMENT_METHODS
            and method not in torch_api.STATE_WRITERS  # `model.save_pretrained(path)`: reads the model
            and method
            not in ("load_state_dict", "cpu", "float", "half", "requires_grad_", "zero_grad", "register_forward_hook")
        )

    def training_steps(self) -> tuple[list[cst.Call], list[cst.Call]]:
        """The scope's own backward calls, and those plus its calls into the training code (found
        once: asked again for every state_dict() call the checkpoint rewrites look at)."""
        if self._steps_found is None:
            tree = self.tree
            backwards_here = [
                c
                for c in backward_calls(tree, set())
                if tree.contains(self.scope, c) and tree.function_of(c) is self.scope
            ]
            self._steps_found = (
                backwards_here,
                [
                    *backwards_here,
                    *(call for callee, call in self.graph.calls_from(self.scope) if callee in self.training),
                ],
            )
        return self._steps_found

    def _rebuilt_optimizers(self, steps: list[cst.Call]) -> list[cst.Assign]:
        """``optimizer = torch.optim.Adam(model.parameters(), lr=lr)`` again inside the loop that
        trains, after the first one outside it (yunjey's tutorials decay the LR so): a new optimizer
        of the same prepared model, prepared where it is built. Not when a scheduler holds the
        optimizer it replaces (it would go on stepping the old one) or a model is built in the loop."""
        if self.schedulers or self.kept_schedulers:
            return []
        found: list[cst.Assign] = []
        for key in self.optimizers:
            first, *later = self._creations_for_training(key, steps)
            for node in later:
                loop = next((a for a in self.tree.ancestors(node) if isinstance(a, (cst.For, cst.While))), None)
                if (
                    isinstance(node, cst.Assign)
                    and len(node.targets) == 1
                    and code(node.targets[0].target).strip() == key
                    and loop is not None
                    and self.tree.contains(self.scope, loop)
                    and not self.tree.contains(loop, first)
                    and any(self.tree.contains(loop, step) for step in steps)
                    and not any(
                        self.tree.contains(loop, n) for m in self.models for n in self._creations_for_training(m, steps)
                    )
                ):
                    found.append(node)
        return found

    def _creations_for_training(self, key: str, steps: list[cst.Call]) -> list[cst.CSTNode]:
        """The bindings of ``key`` that make the object training uses: not one after the last
        training step outside any loop that trains (the quickstart's ``model = NeuralNetwork()``
        built again to load the saved weights; a k-fold script's ensemble loop building each
        fold's model again to predict), which is a new, unprepared object."""
        nodes = [
            n
            for n in bindings(self.scope, key)
            if not self.is_removed(n) and not rebinds_itself(self.tree, n) and not self._own_bar(n, key)
        ] + prepared_after(self, key)
        last_step = max((self.tree.line(s) for s in steps), default=None)
        if last_step is None:
            return nodes
        kept = [n for n in nodes if self.tree.line(n) < last_step or self._in_training_loop(n, steps)]
        return kept or nodes

    def recreated_at(self, key: str) -> int | None:
        """The line from which ``key`` names an object made again after training (see
        :meth:`_creations_for_training`): calls on it there are the script's own, left as they are."""
        _, steps = self.training_steps()
        kept = self._creations_for_training(key, steps)
        later = [
            self.tree.line(n)
            for n in bindings(self.scope, key)
            if n not in kept
            and not self.is_removed(n)
            and not rebinds_itself(self.tree, n)
            and not any(self.tree.contains(n, s) for s in steps)
        ]  # `model, acc = train_model(model, ...)` binds the trained model, not a new one
        return min(later, default=None)

    def _in_training_loop(self, node: cst.CSTNode, steps: list[cst.Call]) -> bool:
        """``node`` is in a loop of the scope that also holds a training step: its next pass
        trains what ``node`` binds."""
        for anc in self.tree.ancestors(node):
            if anc is self.scope:
                return False
            if isinstance(anc, (cst.For, cst.While)) and any(self.tree.contains(anc, s) for s in steps):
                return True
        return False

    def _place_accelerator(
        self, settings: dict[str, Setting], script: ScriptSettings, prepare_block: Block, prepare_index: int
    ) -> None:
        tree = self.tree
        home = self.accelerator_home  # the scope, or the __init__ of a trainer that prepares in another method
        scope_block: Block = tree.body_of(home)
        uses = self._scope_uses()
        anchor = prepare_block.body[prepare_index] if prepare_index < len(prepare_block.body) else None
        if home is self.scope:
            block = self.descend(scope_block, uses + ([anchor] if anchor is not None else [prepare_block.body[-1]]))
        else:
            block = self.descend(scope_block, uses)
        positions = [i for i in (self.project(block, u) for u in uses) if i is not None]
        if prepare_block is block:
            positions.append(prepare_index)
        elif home is self.scope:
            holder = self.project(block, prepare_block.body[-1] if anchor is None else anchor)
            if holder is not None:
                positions.append(holder)
        else:  # nothing in __init__ reads the accelerator: it is made before the model is
            made = [self.binding_index(block, model, home) for model in self.models]
            positions.append(min((i for i in made if i >= 0), default=len(block.body)))
        first_use = min(positions)
        flags = self._device_flags()
        # a device choice read from the script's own flags (`"cuda" if use_cuda else "cpu"`) is kept
        # only where its names are bound before the Accelerator's place
        choices = [
            (condition, roots)
            for condition, roots in self._device_choices()
            if all(self.binding_index(block, root, home) < first_use for root in roots)
        ]
        dependencies = _names_in(
            [*script.values.values(), *([script.condition] if script.condition is not None else [])]
        ) + [".".join(key.split(".")[:2]) if key.startswith("self.") else key.split(".")[0] for key in flags]
        dependencies += _names_in([t for b in self.flag_branches.values() if b for t in b[1]])
        if home is not self.scope:  # `self.args = args` must come before a plugin that reads self.args.compile
            dependencies += settings_keys(
                [*script.values.values(), *([script.condition] if script.condition is not None else [])]
            )
        last_dependency = max((self.binding_index(block, name, home) for name in dependencies), default=-1)
        rebinds = _global_rebinds(tree, block) if isinstance(self.scope, cst.Module) else []
        configured_devices = [
            u for u in uses if u in self.device_values and rebinds and (self.project(block, u) or 0) <= rebinds[-1]
        ]
        if rebinds and (dependencies or configured_devices):
            # nanoGPT's configurator: exec(open(...).read()) / globals().update(...) rebinds any global
            last_dependency = max(last_dependency, rebinds[-1])
        for node in self.accelerator_after:
            index = self.project(block, node)
            if index is None:
                raise Refusal(
                    f"the Accelerator must be created after line {tree.line(node)}, which is not in the block that "
                    "prepares the model; convert by hand"
                )
            last_dependency = max(last_dependency, index)
        extra: list[cst.BaseStatement] = []
        if last_dependency >= first_use:
            early = [u for u in uses if (self.project(block, u) or 0) <= last_dependency]
            movable = all(
                u in self.device_values
                and (_is_own_line(block, self.project(block, u), u) or self.project(block, u) == last_dependency)
                for u in early
            )  # `device = ...` on its own line, or in the branches of the process group's own set-up
            if not movable or (prepare_block is block and prepare_index <= last_dependency):
                name = next((n for n in dependencies if self.binding_index(block, n, home) == last_dependency), None)
                needed = (
                    f"the Accelerator is needed from line {tree.line(early[0]) if early else tree.line(self.scope)} on"
                )
                later = tree.line(block.body[last_dependency])
                raise Refusal(
                    f"{needed}, but its settings use {name!r}, assigned later (line {later}); move that assignment up"
                    if name is not None
                    else f"{needed}, but it can only be created after line {later} (process group set-up, or a "
                    "configurator that may rebind any global); move that code up"
                )
            for use in early:  # `device = "cuda"` above the settings: keep it, set it again right after
                self.edits.replace.pop(use, None)
                self.devices -= 1
                target, value = self.device_values[use]
                if f"{target} = {value}" not in [code(e).strip() for e in extra]:
                    extra.append(statement(f"{target} = {value}", self.module))
                if rebinds and use in configured_devices:
                    flags.append(target)  # a config value the command line may set to "cpu"
            first_use = last_dependency + 1
        if flags:
            self.cpu_conditions += [self._flag_cpu_condition(key) for key in dict.fromkeys(flags)]
            self.notes.append(
                f'the script\'s device setting ({", ".join(dict.fromkeys(flags))}) still works: "cpu" gives '
                "Accelerator(cpu=True); any other value lets Accelerate place each process on its own device"
            )
        for condition, _ in choices:
            if condition not in self.cpu_conditions:
                self.cpu_conditions.append(condition)
                self.notes.append(
                    f"the script's own choice of the CPU still works: Accelerator(cpu={condition}); otherwise "
                    "Accelerate places each process on its own device"
                )
        if _always(self.cpu_conditions):  # `if ddp: device = "cpu" else: device = "cpu"`
            self.cpu_conditions = ["True"]
        else:
            join_processes_only(self)
        if self.cpu_conditions:
            self.accelerator_keywords.append(f"cpu={' or '.join(self.cpu_conditions)}")
        elif not self.distribution.by_hand:
            self.notes.append(PLAIN_TORCHRUN_ON_CPU_NOTE)
        indent = self.indentation_of(block)
        plugin = call_statement("dynamo_plugin = ", "TorchDynamoPlugin", _plugin_text(settings), self.module, indent)
        keywords = ", ".join(["dynamo_plugin=dynamo_plugin", *self.accelerator_keywords])
        accelerator = statement(f"{self.acc_key} = Accelerator({keywords})", self.module)
        before = [statement(source, self.module) for source in self.before_accelerator]
        if self.global_accelerator:
            before.append(statement(f"global {self.acc_key}", self.module))
        extra += [statement(source, self.module) for source in self.after_accelerator]
        self.edits.add_statements(block, first_use, [*before, plugin, accelerator, *extra], after=False)
        download_first(self, block, first_use)
        log_from_main_process(self, block, first_use)
        if self.hand_written_batches is not None:
            split_hand_written_batches(self, block, first_use, self.hand_written_batches)
        self.created_at = (
            function_name(home) if self.owner is None else f"{self.owner.name.value}.{function_name(home)}"
        )

    def _refuse_double_backward(self) -> None:
        """A gradient penalty differentiates the loss twice, which neither the compile nor DDP supports."""
        tree = self.tree
        for call in find_all(tree.module, cst.Call):
            # the keyword first: resolving every call's name costs a scope look-up each, and
            # few calls of a script are asked their names again (1.2 % of a fixture round)
            if any(
                a.keyword is not None and a.keyword.value == "create_graph" and code(a.value) == "True"
                for a in call.args
            ) and tree.resolves_to(call.func, *torch_api.AUTOGRAD_GRAD):
                raise Refusal(
                    f"torch.autograd.grad(..., create_graph=True) at line {tree.line(call)} (a gradient penalty, or a "
                    "derivative with respect to the inputs such as a PDE residual) "
                    "differentiates the loss twice, which torch.compile (aot_autograd) and DDP do not support; "
                    "convert by hand, keeping that model uncompiled and unwrapped"
                )

    def _scope_uses(self) -> list[cst.CSTNode]:
        """Where the scope needs the accelerator. In a module-level script a use inside a function
        counts where that function is called from module code (Python reads the global when the
        function runs), so functions defined above ``args = parser.parse_args()`` do not pull the
        Accelerator above the settings it reads."""
        tree = self.tree
        found: list[cst.CSTNode] = []
        for use in self.uses:
            helper = next(((h, c) for h, c in self.init_builders if tree.contains(h, use)), None)
            if helper is not None:  # in the method __init__ calls to build the model: before that call
                found.append(helper[1])
                continue
            if not tree.contains(self.accelerator_home, use):
                continue
            function = tree.function_of(use)
            if isinstance(self.scope, cst.Module) and function is not self.scope:
                found += self._module_calls_of(function, 0)
            else:
                found.append(use)
        return found

    def _module_calls_of(self, function: Function, depth: int) -> list[cst.CSTNode]:
        """The calls in module-level code that (through other functions) run ``function``."""
        if depth > 3 or isinstance(function, cst.Module):
            return []
        calls: list[cst.CSTNode] = list(self.batch_method_calls.get(id(function), []))
        for caller, call in self.graph.callers_of(function):
            calls += [call] if isinstance(caller, cst.Module) else self._module_calls_of(caller, depth + 1)
        return calls

    def _let_step_take_a_closure(self) -> None:
        """The prepared optimizer calls ``optimizer.step(closure)`` (accelerate 1.15
        ``AcceleratedOptimizer.step``; a GradScaler's ``step`` passes it on too): a prepared
        ``torch.optim.Optimizer`` subclass of the script whose ``def step(self):`` takes no closure
        (Barlow Twins' LARS) would raise TypeError at its first step; it gets ``closure=None``."""
        constructs = {found.construct for found in find_optimizers(self.tree, self.scope)}
        if self.optimizer_method is not None:
            constructs |= {found.construct for found in find_optimizers(self.tree, self.optimizer_method.method)}
        for cls in find_all(self.tree.module, cst.ClassDef):
            if cls.name.value not in constructs or not any(
                self.tree.resolves_to(base.value, *torch_api.OPTIMIZER_BASE) for base in cls.bases
            ):
                continue
            method = method_named(cls, "step")
            if method is not None:
                params = method.params
                if (
                    len(params.params) == 1
                    and not params.posonly_params
                    and not params.kwonly_params
                    and (not isinstance(params.star_arg, cst.Param) and params.star_kwarg is None)
                ):
                    closure = cst.Param(
                        cst.Name("closure"),
                        default=cst.Name("None"),
                        equal=cst.AssignEqual(
                            whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
                        ),
                    )
                    first = params.params[0].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
                    self.edits.on(params, _with_params([first, closure]))
                    self.notes.append(
                        f"{cls.name.value}.step(self) (line {self.tree.line(method)}) now takes closure=None: the prepared "
                        "optimizer calls step(closure), which it ignores"
                    )

    def _keep_one_loss_scaling(self) -> None:
        """A script with its own ``GradScaler`` scales its loss itself: ``mixed_precision="no"``
        keeps that the only scaling. Without it, ``accelerate launch --mixed_precision fp16`` (or
        an ``accelerate config`` that sets it) would make Accelerate scale the scaled loss again
        (an explicit argument outranks both: accelerate's ``AcceleratorState``)."""
        scalers = self._live_grad_scalers()
        if not scalers:
            return
        self.accelerator_keywords.append('mixed_precision="no"')
        lines = ", ".join(str(call.lineno) for call in scalers)
        self.notes.append(
            f'the script scales its loss with its own GradScaler (line {lines}): Accelerator(mixed_precision="no") '
            "keeps it the only scaling, whatever a --mixed_precision launch flag or accelerate config says; "
            'to let Accelerate do it, drop the GradScaler and autocast and pass mixed_precision="fp16"'
        )

    def _live_grad_scalers(self) -> list[ast.Call]:
        """The script's ``GradScaler`` calls outside the functions nothing in the file calls
        (:func:`_called_nowhere`: nbme_fold's dead ``train_fn_adv``, left as it is, built one it
        never used and set ``mixed_precision="no"`` with a note pointing at it)."""
        view = lint_view(self.tree)
        roles = view.roles
        if roles is None or not roles.mixed_precision.scales_loss:
            return []
        dead = [
            statement
            for function in find_all(self.tree.module, cst.FunctionDef)
            if _called_nowhere(self.tree, function)
            and isinstance(statement := view.statement_at(function), (ast.FunctionDef, ast.AsyncFunctionDef))
        ]
        inside = {id(node) for statement in dead for node in walk(statement)}
        return [call for call in roles.mixed_precision.grad_scalers if id(call) not in inside]

    def _keep_hand_update_unscaled(self) -> None:
        """Parameters updated by hand read ``p.grad`` straight after ``accelerator.backward()``;
        under fp16 mixed precision that gradient would be the loss scaler's, scaled and never
        unscaled (no prepared optimizer steps through the scaler): ``mixed_precision="no"``."""
        update = self.hand_update
        if update is None:
            return
        if 'mixed_precision="no"' not in self.accelerator_keywords:
            self.accelerator_keywords.append('mixed_precision="no"')
        self.notes.append(
            f"the parameters of {update.model} are updated by hand ({update.text!r}, line {update.line}), with no "
            f"optimizer: {update.model} is prepared alone and the update stays, reading the gradients DDP averaged; "
            'Accelerator(mixed_precision="no"), since under fp16 it would read gradients scaled by the loss scaler'
        )

    def _stay_on_cpu_without_devices(self) -> None:
        """A script that never places anything on a device trains on the CPU, and so does its
        conversion: prepare() would move the model (and the prepared loaders' batches) to the GPU
        while every tensor the script makes itself stays on the CPU. A device the script computes
        and never uses for placement is no device (``device = ...`` never read: survey 21d)."""
        if self.cudas or self.distribution.by_hand or places_on_device(self.tree):
            return
        self.cpu_conditions.append("True")
        self.notes.append(
            "cpu=True: the script never moves its model or data to a device, so it trains on the CPU as before "
            "(prepare() would otherwise put the model and the prepared loaders' batches on the GPU and leave the "
            "tensors the script makes itself on the CPU); drop cpu=True once the script places its own tensors "
            "on accelerator.device"
        )

    def _refuse_rank_guarded_steps(self, backwards: list[cst.Call]) -> None:
        """A training step that only the main process runs (llm.c's ``if args.write_tensors and
        (not ddp or master_process): ... loss.backward()``, which dumps one step's gradients), or
        that some processes leave before (``if rank != 0 and ...: return``): once the model is
        prepared, its backward all-reduces the gradients and waits for the other processes, which
        never come."""
        tree, view = self.tree, lint_view(self.tree)
        _, steps = self.training_steps()
        for node in [*backwards, *steps]:
            for anc in tree.ancestors(node):
                if isinstance(anc, (cst.FunctionDef, cst.Module)):
                    break
                if not (isinstance(anc, cst.If) and tree.contains(anc.body, node)):
                    continue
                if anc.orelse is not None and any(tree.contains(anc.orelse, s) for s in [*backwards, *steps]):
                    continue  # VITS: `if rank == 0: train(..., logger) else: train(..., None)`: every process trains
                if holds_a_main_process_test(self, anc.test):
                    raise Refusal(
                        f"{code(node).strip().splitlines()[0]} at line {tree.line(node)} trains on the main process only "
                        f"(`if {code(anc.test).strip()}` at line {tree.line(anc)}): once prepare() wraps the model, its "
                        "backward waits for the other processes' gradients, which never come; run it on the plain "
                        "model before prepare(), or convert by hand"
                    )
            for if_, exit_ in skips(tree, node):
                test = view.any_expression_at(if_.test)
                if test is not None and tests_the_rank(test):
                    raise Refusal(
                        f"{code(node).strip().splitlines()[0]} at line {tree.line(node)} is skipped by the "
                        f"`{code(exit_).strip().split()[0]}` under `if {code(if_.test).strip()}` (line {tree.line(if_)}) "
                        "on some processes only: once prepare() wraps the model, its backward waits for the other "
                        "processes' gradients, which never come; convert by hand"
                    )

    def _overwritten_later(self, assign: cst.Assign) -> bool:
        """``device = "cpu"`` followed in its block by ``if torch.cuda.is_available(): device =
        "cuda"`` (llm.c's autodetect): a default the next statements replace, not a choice."""
        target = single_target(assign)
        line = self.tree.parent(assign)
        block = self.tree.parent(line) if line is not None else None
        if target is None or block is None or not isinstance(block, (cst.IndentedBlock, cst.Module)):
            return False
        body: list[cst.CSTNode] = list(block.body)
        if line not in body:
            return False
        later = body[body.index(line) + 1 :]
        return any(target[0] in bound_keys(node) for stmt in later for node in find_all(stmt, cst.Assign))

    def _cpu_once_and_for_all(self, assign: cst.Assign) -> bool:
        """``device = "cpu"`` is the only binding of its name in the file, and nothing may rebind
        any global (nanoGPT's configurator): the script chose the CPU, not a default."""
        target = single_target(assign)
        if target is None or _global_rebinds(self.tree, self.tree.module):
            return False
        binders = [node for node in find_all(self.tree.module, cst.Assign) if target[0] in bound_keys(node)]
        return binders == [assign] and not any(
            target[0] in (n.name.value for n in g.names) for g in find_all(self.tree.module, cst.Global)
        )

    def _device_choices(self) -> list[tuple[str, list[str]]]:
        """``"cuda" if use_cuda else "cpu"`` in a rewritten device assignment: the CPU condition
        (``not use_cuda``) and the names it reads; a test on ``torch.cuda.is_available()`` alone
        is what Accelerate does anyway and gives nothing."""
        view = lint_view(self.tree)
        devices = view.devices
        found: list[tuple[str, list[str]]] = []
        if devices is None:
            return found
        for assign in self.device_values:
            if assign not in self.edits.replace or not isinstance(assign, cst.Assign):
                continue
            for choice in find_all(assign.value, cst.IfExp):
                decided = devices.choice(view.any_expression_at(choice))
                # `"cuda" if torch.cuda.is_available() else "mps" if ... else "cpu"` (nanovit, survey25a): the
                # inner choice runs only without CUDA, and the whole is Accelerate's own order; alone it sent a
                # CUDA machine to the CPU (cpu=not mps)
                earlier = earlier_choices(self.tree, choice)
                nested = (
                    bool(earlier)
                    and is_cuda_value(earlier[-1].body)
                    and not devices.own_names(view.any_expression_at(earlier[-1].test))
                )
                # `"cuda" if args.cuda else "mps" if ... else "cpu"` (leftalone25c): the inner choice runs
                # only when every earlier test fails, so the CPU needs each of them false too
                before = [_negated(outer.test) for outer in earlier]
                before_names = [n for outer in earlier for n in devices.own_names(view.any_expression_at(outer.test))]
                if (
                    decided is not None
                    and not decided.flags
                    and not nested
                    and (never_cuda := mps_or_cpu_condition(choice))
                ):
                    join_processes_without_cuda(self)
                    found.append((" and ".join([*before, never_cuda]), list(dict.fromkeys(before_names))))
                    continue
                if decided is None or not decided.flags:
                    continue
                if decided.cpu_when:
                    test = code(choice.test).strip()
                    condition = f"({test})" if " " in test else test
                else:
                    condition = _negated(choice.test)
                found.append((" and ".join([*before, condition]), list(dict.fromkeys([*before_names, *decided.flags]))))
            # `if use_accel: device = ... else: device = torch.device("cpu")`: the branch that chose the CPU
            branch = (
                branch_condition(self.tree, assign)
                if is_cpu_value(assign.value) and not self._overwritten_later(assign)
                else None
            )
            names = (
                [n for test in branch[1] for n in devices.own_names(view.any_expression_at(test))]
                if branch is not None
                else []
            )
            if branch is not None and names:
                found.append((branch[0], list(dict.fromkeys(names))))
            elif branch is None and is_cpu_value(assign.value) and self._cpu_once_and_for_all(assign):
                found.append(("True", []))  # `device = "cpu"`, and nothing else ever: survey 22a charrnn_wp
        # `if args.cuda: model.cuda()` (no else): the flag that chose the GPU
        for node in self.edits.replace:
            if not (
                isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value == "cuda"
            ):
                continue
            if any(arg.keyword is None for arg in node.args):
                continue  # `.cuda(args.gpu)` under `if args.gpu is not None:` picks a GPU, not whether to use one
            for anc in self.tree.ancestors(node):
                if isinstance(anc, (cst.FunctionDef, cst.Module)):
                    break
                if isinstance(anc, cst.If) and self.tree.contains(anc.body, node):
                    if anc.orelse is not None or isinstance(self.tree.parent(anc), cst.If):
                        break  # an if/else over where to run, not a switch for the GPU
                    if not only_moves_devices(anc.body):
                        break  # `if args.word_vectors: <load them>; model.cuda()`: a feature switch
                    switch = devices.own_names(view.any_expression_at(anc.test))
                    if switch:
                        found.append((_negated(anc.test), list(switch)))
                    break
        return found

    def _device_flags(self) -> list[str]:
        """Keys like ``args.device`` that rewritten device assignments read: the user's device flag."""
        view = lint_view(self.tree)
        flags: list[str] = []
        self.flag_branches.clear()
        for assign in self.device_values:
            if assign not in self.edits.replace or not isinstance(assign, cst.Assign) or view.devices is None:
                continue
            read = view.devices.flags(view.any_expression_at(assign.value))
            branch = branch_condition(self.tree, assign)
            for flag in read:
                # `if opt.cuda: ... else: device = torch.device(opt.device)`: the flag decides only there
                if flag not in self.flag_branches:
                    self.flag_branches[flag] = branch
                elif (self.flag_branches[flag] or ("",))[0] != (branch or ("",))[0]:
                    self.flag_branches[flag] = None  # read in several branches: the flag alone
            flags += read
        return flags + [f for f in self.inline_device_flags if f not in flags]

    def _flag_cpu_condition(self, flag: str) -> str:
        """``str(args.device) == "cpu"``, and the branch it is read in (``not opt.cuda and ...``)."""
        test = f'str({flag}) == "cpu"'
        branch = self.flag_branches.get(flag)
        return f"({branch[0]} and {test})" if branch is not None else test

    def _describe(self, settings: dict[str, Setting], reason: str | None, sites: list[CompileSite]) -> None:
        plugin = ", ".join(_plugin_text(settings))
        notes = [f"Accelerator(dynamo_plugin=TorchDynamoPlugin({plugin})) created in {self.created_at}"]
        notes.append(f"prepared: {', '.join(prepared_as(self.method_loss, self.prepared)[0])}")
        notes.append(LAUNCH_FLAGS_NOTE)
        for site in sites:
            if site.alias is None:  # an alias has its own note
                notes.append(site.removal_note())
        if reason and settings.get("use_regional_compilation", Setting("", "")).code == "True":
            notes.append(f"use_regional_compilation=True: {reason}")
        notes.append(f"{self.backwards} X.backward() call(s) -> {self.acc_key}.backward(X)")
        if self.devices:
            notes.append(f"{self.devices} device assignment(s) now use {self.acc_key}.device")
        if self.cudas:
            notes.append(f"{self.cudas} .cuda()/.to(<device>) call(s) now use {self.acc_key}.device")
        if self.checkpoint_saves:
            notes.append(
                "state_dict() of the prepared model is taken from accelerator.unwrap_model(..., keep_torch_compile=False) (no _orig_mod. keys)"
            )
        if self.whole_model_saves:
            lines = ", ".join(map(str, self.whole_model_saves))
            notes.append(
                f"torch.save of the whole model (line {lines}) -> {self.acc_key}.save of "
                "accelerator.unwrap_model(..., keep_torch_compile=False): the plain module is pickled, once"
            )
        if self.checkpoint_loads:
            notes.append(
                f"{self.checkpoint_loads} load_state_dict() into the prepared model now load(s) into "
                "accelerator.unwrap_model(..., keep_torch_compile=False), matching the clean keys saved"
            )
        if self.options.plan is not None:
            notes += [f"plan: {why}" for why in self.options.plan.why]
            notes += self._plan_model_mismatch()
        self.notes[:0] = notes

    def _plan_model_mismatch(self) -> list[str]:
        """The plan names the model it was traced on; say so when this script has no such model."""
        wanted = self.options.plan.model if self.options.plan is not None else None
        if not wanted:
            return []
        names = set(self.models)
        for model in self.models:
            homes = [self.scope, self.accelerator_home, *self.init_helpers]
            for node in [n for home in homes for n in bindings(home, model)]:
                if isinstance(node, cst.Assign) and isinstance(node.value, cst.Call):
                    names.add(code(node.value.func).rsplit(".", 1)[-1])
        if wanted in names:
            return []
        return [
            f"the plan was made for model {wanted!r}, which this script does not build ({', '.join(sorted(names))})"
        ]


def _receiver_of(updated: cst.Call) -> cst.CSTNode:
    """``X.to(device)`` -> ``X`` (as updated by the edits inside it)."""
    return updated.func.value if isinstance(updated.func, cst.Attribute) else updated


def _with_params(params: list[cst.Param]) -> Callable[[cst.Parameters], cst.Parameters]:
    """An edit giving a function's parameter list exactly ``params``."""

    def edit(updated: cst.Parameters) -> cst.Parameters:
        return updated.with_changes(params=params)

    return edit


def _optimizer_place(tree: Tree, function: Function) -> str:
    """Where ``function`` builds its first optimizer, for the several-places refusal: the function
    and the line (``train_worker() (optimizer = AdamW(...) at line 159)``), not the function alone
    (survey 22b: two spawned workers, each building its own optimizer)."""
    first = next(iter(find_optimizers(tree, function)), None)
    if first is None:
        return function_name(function)
    return f"{function_name(function)} ({first.key} = {first.construct}(...) at line {tree.line(first.stmt)})"


def _hands_back(function: Function, keys: list[str | None]) -> bool:
    """Every optimizer ``function`` builds is an element of a tuple or dict display it returns
    (``return model, optimizer, scheduler``, ``return {"optimizer": optimizer}``)."""
    if isinstance(function, cst.Module) or not keys:
        return False
    returned: set[str] = set()
    for r in find_all(function, cst.Return, enter_functions=False):
        if isinstance(r.value, (cst.Tuple, cst.List)):
            returned |= {k for e in r.value.elements if (k := key_of(e.value))}
        elif isinstance(r.value, cst.Dict):
            returned |= {k for e in r.value.elements if isinstance(e, cst.DictElement) and (k := key_of(e.value))}
    return all(key in returned for key in keys)


def _returned_keys(function: Function) -> set[str]:
    """Keys a function returns as a whole (``return optimizer``)."""
    if isinstance(function, cst.Module):
        return set()
    returns = find_all(function, cst.Return, enter_functions=False)
    return {key for r in returns if r.value is not None for key in [key_of(r.value)] if key}


def _names_in(expressions: list[cst.BaseExpression]) -> list[str]:
    """Root names an expression reads (``args`` of ``args.compile``)."""
    found: list[str] = []
    for expr in expressions:
        found += [key.split(".")[0] for key in read_keys(expr) if key.split(".")[0] not in found]
    return found


def _wrapped_model(function: Function, key: str) -> str:
    """``raw_model = model.module`` (or ``model.module if ddp else model``): an optimizer built from
    ``raw_model`` trains ``model``, the object the script calls and prepare() must wrap (llm.c);
    so does one built from ``orig_model = model`` when the script calls ``model`` only."""
    nodes = [n for n in bindings(function, key) if isinstance(n, cst.Assign)]
    if len(nodes) != 1:
        return key
    value = nodes[0].value
    if isinstance(value, cst.IfExp):
        value = value.body
    inner = key_of(value.value) if isinstance(value, cst.Attribute) and value.attr.value == "module" else None
    if inner is None and isinstance(value, cst.Name) and value.value != key:
        inner = value.value if _called(function, value.value) and not _called(function, key) else None
    return inner or key


def _called(function: Function, key: str) -> bool:
    """Does ``function`` call ``key`` (``model(x)``)? ``orig_model = model`` beside a loop calling
    ``model(x, y)`` (and maybe ``model = torch.compile(model)``): the optimizer built from
    ``orig_model`` trains ``model``, which prepare() must wrap, else the loop runs outside DDP."""
    return any(key_of(call.func) == key for call in find_all(function, cst.Call, enter_functions=False))


def _is_passed(tree: Tree, function: cst.FunctionDef) -> bool:
    """Is this function handed to a call (``optimizer.step(closure)``) where it is defined?"""
    return any(isinstance(tree.parent(ref), cst.Arg) for ref in tree.references_to(function))


def _names_handed(callee: cst.FunctionDef, call: cst.Call) -> list[tuple[str, cst.Name]]:
    """``(parameter, name)`` for each plain name ``call`` hands ``callee``, by position or keyword."""
    params = [p.name.value for p in callee.params.params]
    out = []
    for index, arg in enumerate(call.args):
        if arg.star or not isinstance(arg.value, cst.Name):
            continue
        if arg.keyword is not None:
            out.append((arg.keyword.value, arg.value))
        elif index < len(params):
            out.append((params[index], arg.value))
    return out


def _trained_iterables(roles: TrainingRoles) -> set[str | None]:
    """The keys of what the training loops iterate (``loader``, ``self.train_loader``)."""
    return {binding_key(u.expr) for u in roles.uses if u.how == "iterated" and roles.trains_on(u)}


def _loop_source(loop: cst.For) -> cst.BaseExpression:
    """What ``loop`` iterates, through one ``enumerate(...)`` / ``tqdm(...)`` / ``iter(...)``."""
    it = loop.iter
    if isinstance(it, cst.Call) and it.args and key_of(it.func) in ("enumerate", "tqdm", "iter"):
        return it.args[0].value
    return it


def _always(conditions: list[str]) -> bool:
    """``c or not c``: both branches of a choice picked the CPU; or one choice is the CPU always."""
    return "True" in conditions or any(f"not {c}" in conditions or f"not ({c})" in conditions for c in conditions)


def _saved_prefix(tree: Tree, name: str, wrap: cst.Call) -> str:
    """The prefix of the original's state-dict keys for ``name``, wrapped by ``wrap`` (DDP):
    ``module.``; ``_orig_mod.module.`` when the script then compiled the wrapper (clip_ddp, survey
    23a: ``model = DDP(model)``, then ``model = torch.compile(model)``, kept or not by the
    conversion), ``module._orig_mod.`` when it wrapped the compiled model. Read in the function
    that wraps it."""
    compiled = f"{torch_api.COMPILE_WRAPPER_ATTRIBUTE}."
    wrapper = "module."
    lines = [
        tree.line(assign)
        for assign in find_all(tree.function_of(wrap), cst.Assign, enter_functions=False)
        if (target := single_target(assign)) is not None
        and target[0] == name
        and isinstance(assign.value, cst.Call)
        and tree.resolves_to(assign.value.func, *torch_api.TORCH_COMPILE)
    ]
    if not lines:
        return wrapper
    return compiled + wrapper if lines[-1] > tree.line(wrap) else wrapper + compiled


def _negated(test: cst.BaseExpression) -> str:
    """``not <test>`` as source: ``not x`` for a plain name, ``x`` for ``not x``, else ``not (...)``."""
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return code(test.expression).strip()
    text = code(test).strip()
    return f"not ({text})" if " " in text else f"not {text}"


def _global_rebinds(tree: Tree, block: Block) -> list[int]:
    """Indices of top-level statements that may rebind any global (``analysis/global_rebinders.py``)."""
    view = lint_view(tree)
    found = []
    for index, stmt in enumerate(block.body):
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        statements = [view.statement_at(small) for small in stmt.body]
        if any(s is not None and rebinds_globals(s) for s in statements):
            found.append(index)
    return found


def _is_own_line(block: Block, index: int | None, node: cst.CSTNode) -> bool:
    """Is ``node`` an assignment that is the whole statement ``block.body[index]``?"""
    if index is None or not isinstance(node, cst.Assign):
        return False
    line = block.body[index]
    return isinstance(line, cst.SimpleStatementLine) and len(line.body) == 1 and line.body[0] is node


def _names(keys: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return " and ".join([", ".join(keys[:-1]), keys[-1]]) if len(keys) > 1 else "".join(keys)


def _called_nowhere(tree: Tree, function: cst.FunctionDef) -> bool:
    """A function of the file's top level or nested in one, not a method, that nothing in the file
    names (not called, not passed): its code never runs, like a spawn in a helper nothing calls."""
    return tree.class_of(function) is None and not tree.references_to(function)


def _source(stmt: cst.CSTNode) -> str:
    """A statement as a note quotes it: its code without a trailing comment; a compound one by its
    first line (``if ddp: ...``), not its whole body and the comments above it."""
    if isinstance(stmt, cst.SimpleStatementLine):
        return "; ".join(code(small).strip() for small in stmt.body)
    if isinstance(stmt, cst.BaseCompoundStatement):
        return f"{header(stmt)} ..."
    return code(stmt).strip()


def _counts_epochs(imports, call: ast.Call) -> bool:
    """``trange(n)`` or ``tqdm(range(n))``: a progress bar over numbers (see
    :data:`~regcomp_lint.knowledge.training_libraries.PROGRESS_RANGES`)."""
    qualname = imports.qualname(call.func)
    if qualname in PROGRESS_RANGES:
        return True
    first = call.args[0] if call.args else None
    return (
        qualname in ITERATION_WRAPPERS
        and isinstance(first, ast.Call)
        and isinstance(first.func, ast.Name)
        and first.func.id == "range"
        and not imports.imported("range")
    )


def _sliced(scope: ast.AST, key: str) -> bool:
    """``scope`` cuts a slice out of what ``key`` names (``order[begin : begin + bs]``): an array
    or a list the batches are taken from by hand; a DataLoader cannot be sliced, so it is no
    loader of unknown origin (survey 21d, a skip-gram trainer's epoch permutation)."""
    return any(
        isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice) and binding_key(node.value) == key
        for node in ast.walk(scope)
    )


def _keyed_from_factory(roles: TrainingRoles, bound: Bound) -> Bound | None:
    """For ``train_loader = loaders["train"]`` (a constant key), where the same scope bound
    ``loaders = get_dataloaders(cfg)`` to a call of a function another module defines: that
    binding, so the loader is judged as ``train_loader = get_dataloaders(cfg)`` is (survey 19c's
    Hydra VAE). None otherwise: a local factory's dict is the roles' to follow."""
    value = bound.value
    if not (isinstance(value, ast.Subscript) and isinstance(value.value, ast.Name)):
        return None
    if not isinstance(value.slice, ast.Constant):
        return None
    held = roles.bindings.lookup(value.value, bound.where)
    if held is None or held.index is not None or not isinstance(held.value, ast.Call):
        return None
    if held.where.function is not bound.where.function:
        return None
    func = held.value.func
    root = func
    while isinstance(root, ast.Attribute):
        root = root.value
    if not isinstance(root, ast.Name) or not roles.ctx.imports.imported(root.id):
        return None
    return held


def _bar_over_unknown(roles: TrainingRoles, bound: Bound) -> bool:
    """``bound`` is an iteration wrapper (``tqdm(x)``) over nothing the roles know."""
    value = bound.value
    return (
        isinstance(value, ast.Call)
        and roles.ctx.resolves_to(value.func, *ITERATION_WRAPPERS)
        and not any(isinstance(roles.origin(arg, bound.where), Origin) for arg in value.args)
    )


def _bar_over_unprepared(roles: TrainingRoles, bound: Bound, known: list[str]) -> bool:
    """``bound`` is an iteration wrapper the scope builds over a name none of ``known`` (the loaders
    prepared already) is: survey 26f's VQ-VAE, ``pbar = tqdm(enumerate(train_loader))`` over
    ``train_loader, test_loader = get_loaders()`` of a local factory. The loader it wraps decides."""
    value = bound.value
    if not isinstance(value, ast.Call) or not value.args:
        return False
    inner = value.args[0]
    while isinstance(inner, ast.Call) and inner.args and _wraps_iteration(roles, inner):
        inner = inner.args[0]
    return _wraps_iteration(roles, value) and binding_key(inner) not in (None, *known)


def _wraps_iteration(roles: TrainingRoles, call: ast.Call) -> bool:
    func = call.func
    return roles.ctx.resolves_to(func, *ITERATION_WRAPPERS) or (
        isinstance(func, ast.Name) and func.id in ITERATION_BUILTINS and not roles.ctx.imports.imported(func.id)
    )


def _kept_iterable(
    roles: TrainingRoles, bound: Bound, homes: tuple[object, ...], depth: int = 0
) -> tuple[ast.expr, Where, Bound] | None:
    """What ``bound`` (a name a training method binds) iterates, followed through aliases and
    iteration wrappers (``tqdm(...)``, ``enumerate(...)``, ``iter(...)``) to a ``self.`` attribute
    or global that one of ``homes`` (the scope, the Accelerator's home) binds from a call: that
    expression, where it is read, and its binding; None when the chain leads elsewhere."""
    value = bound.value
    if not isinstance(value, ast.expr) or bound.index is not None or depth > 4:
        return None
    if isinstance(value, ast.Call):
        if not _wraps_iteration(roles, value) or not value.args:
            return None
        value = value.args[0]
        while isinstance(value, ast.Call) and value.args and _wraps_iteration(roles, value):
            value = value.args[0]  # `tqdm(enumerate(loader), ...)`
    if not isinstance(value, (ast.Name, ast.Attribute)) or binding_key(value) is None:
        return None
    inner = roles.bindings.lookup(value, bound.where)
    if inner is None:
        return None
    if inner.where.function in homes:
        return (value, bound.where, inner) if isinstance(inner.value, ast.Call) else None
    return _kept_iterable(roles, inner, homes, depth + 1)


def _unread_wrapper(tree: Tree, function: Function, key: str) -> tuple[str, int, str] | None:
    """(class, line, module) when ``function`` hands optimizer ``key`` to a class imported from a
    module of the script's project whose file is not found (survey 24a's ``LARS(base_optimizer)``
    with no ``lars.py`` beside the script): the optimizer that steps is that class's, out of sight."""
    if tree.filename is None:
        return None
    for assign in find_all(function, cst.Assign, enter_functions=False):
        call = assign.value
        if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Name):
            continue
        if not any(isinstance(arg.value, cst.Name) and arg.value.value == key for arg in call.args):
            continue
        for qualname in sorted(tree.imported_names(call.func)):
            module = qualname.rpartition(".")[0]
            if module and is_project_module(module) and load_local(importer_of(tree.filename), module) is None:
                return call.func.value, tree.line(assign), module
    return None


def helper_name(assign: cst.Assign) -> str:
    """``maybe_compile_model`` of ``model, on = maybe_compile_model(model, ...)``."""
    return code(assign.value.func).strip() if isinstance(assign.value, cst.Call) else code(assign.value).strip()
