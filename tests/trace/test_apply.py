"""``apply_plan``: in-place compilation as a plan says (backend="eager" to stay fast)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn

from regcomp_lint.plan import Plan, PlanError  # noqa: E402
from regcomp_lint.trace.apply import ApplyError, apply_plan, compile_kwargs  # noqa: E402


class Block(nn.Module):
    def __init__(self, dim: int = 8) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, dim)

    def forward(self, x):
        return x + torch.relu(self.fc(self.norm(x)))


class Stack(nn.Module):
    """Embedding-free toy LM: `body.blocks` is a ModuleList, `seq` a Sequential, `head` a Linear."""

    def __init__(self, n: int = 3, dim: int = 8) -> None:
        super().__init__()
        self.inp = nn.Linear(dim, dim)
        self.body = nn.Module()
        self.body.blocks = nn.ModuleList(Block(dim) for _ in range(n))
        self.seq = nn.Sequential(*(Block(dim) for _ in range(2)))
        self.head = nn.Linear(dim, 4)

    def forward(self, x):
        x = self.inp(x)
        for block in self.body.blocks:
            x = block(x)
        return self.head(self.seq(x)).logsumexp(-1).mean()


@pytest.fixture(autouse=True)
def _fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _model(seed: int = 0) -> Stack:
    torch.manual_seed(seed)
    return Stack()


def _x():
    return torch.randn(2, 5, 8, generator=torch.Generator().manual_seed(3))


def _regional(method=None, regions=("body.blocks",), **plugin):
    # nested regions need AOT autograd: "aot_eager" is the cheapest backend that has it
    backend = "aot_eager" if method == "nested" else "eager"
    return Plan(
        strategy="regional",
        regions=list(regions),
        method=method,
        plugin={"backend": backend, "use_regional_compilation": True, **plugin},
    )


def _compiled(module) -> bool:
    return getattr(module, "_compiled_call_impl", None) is not None


# -- in place -----------------------------------------------------------------------------
@pytest.mark.parametrize(
    "plan",
    [
        Plan(strategy="full", plugin={"backend": "eager"}),
        _regional(),
        _regional("split"),
        _regional("nested"),
        Plan(strategy="none"),
    ],
    ids=["full", "regional-blocks", "regional-split", "regional-nested", "none"],
)
def test_in_place_same_object_and_clean_state_dict(plan):
    model = _model()
    keys = list(model.state_dict())
    modules = [name for name, _ in model.named_modules()]
    out = apply_plan(model, plan)
    assert out is model
    assert list(model.state_dict()) == keys
    assert not any("_orig_mod" in k for k in model.state_dict())
    assert [name for name, _ in model.named_modules()] == modules


def test_full_compiles_the_model_only():
    model = _model()
    apply_plan(model, Plan(strategy="full", plugin={"backend": "eager"}))
    assert _compiled(model)
    assert not any(_compiled(m) for m in model.body.blocks)


def test_regional_compiles_every_block_and_not_the_glue():
    model = _model()
    apply_plan(model, _regional())
    assert all(_compiled(b) for b in model.body.blocks)
    assert not _compiled(model) and not _compiled(model.head) and not _compiled(model.body.blocks)
    assert not any(_compiled(b) for b in model.seq)


def test_regional_over_a_sequential_and_several_regions():
    model = _model()
    apply_plan(model, _regional(regions=("body.blocks", "seq")))
    assert all(_compiled(b) for b in [*model.body.blocks, *model.seq])


def test_nested_marks_blocks_and_compiles_the_whole_model_once():
    model = _model()
    apply_plan(model, _regional("nested"))
    assert _compiled(model)
    for block in model.body.blocks:
        assert not _compiled(block)
        assert hasattr(block.forward.func, "__marked_compile_region_fn__")
        assert block.forward.args == (block,)
    # one marked function shared by the blocks; the class itself is untouched
    assert len({b.forward.func for b in model.body.blocks}) == 1
    assert "forward" not in vars(model.seq[0])
    assert not hasattr(Block.forward, "__marked_compile_region_fn__")


def test_split_compiles_each_block_as_its_own_frame_once():
    from torch._dynamo.testing import CompileCounterWithBackend

    model = _model()
    apply_plan(model, _regional("split"))
    assert _compiled(model)
    assert all(not _compiled(b) and getattr(b.forward, "__regcomp_split__", False) for b in model.body.blocks)
    assert not hasattr(Block.forward, "__regcomp_split__") and "forward" not in vars(model.seq[0])
    backend = CompileCounterWithBackend("eager")
    model._compiled_call_impl = torch.compile(model._call_impl, backend=backend)
    model(_x())
    model(_x())
    # Stack.forward calls the blocks in a loop: dynamo cannot resume a graph inside a loop, so it
    # runs that frame eagerly; the block frame is compiled once and reused for all three blocks.
    assert backend.frame_count == 1
    assert "layer_norm" in backend.graphs[0].code


def test_split_with_fullgraph_is_refused():
    model = _model()
    with pytest.raises(ApplyError, match='method "split" ends the graph at every block call'):
        apply_plan(model, _regional("split", fullgraph=True))
    assert "forward" not in vars(model.body.blocks[0])


@pytest.mark.parametrize("method", ["split", "nested"])
def test_applied_twice_does_not_wrap_twice(method):
    model = _model()
    apply_plan(model, _regional(method))
    first = model.body.blocks[0].forward
    apply_plan(model, _regional(method))
    assert model.body.blocks[0].forward is first


def test_none_compiles_nothing():
    model = _model()
    apply_plan(model, Plan(strategy="none"))
    assert not any(_compiled(m) for m in model.modules())


def test_compile_kwargs_come_from_the_plugin():
    plan = Plan(
        strategy="regional",
        regions=["h"],
        plugin={"mode": "max-autotune", "fullgraph": True, "dynamic": False, "use_regional_compilation": True},
    )
    assert compile_kwargs(plan) == {"backend": "inductor", "mode": "max-autotune", "fullgraph": True, "dynamic": False}
    assert compile_kwargs(Plan(strategy="full", plugin={"backend": "eager", "mode": None})) == {"backend": "eager"}


def test_fullgraph_reaches_torch_compile():
    class Breaks(nn.Module):
        def __init__(self):
            super().__init__()
            self.blocks = nn.ModuleList([nn.Linear(4, 4)])

        def forward(self, x):
            x = self.blocks[0](x)
            print("graph break")
            return x

    model = Breaks()
    apply_plan(model, Plan(strategy="full", plugin={"backend": "eager", "fullgraph": True}))
    with pytest.raises(torch._dynamo.exc.Unsupported):
        model(torch.randn(2, 4))


# -- outputs and gradients equal eager ---------------------------------------------------------
@pytest.mark.parametrize(
    "plan",
    [
        Plan(strategy="full", plugin={"backend": "eager"}),
        _regional(),
        _regional("split"),
        _regional("split", regions=("body.blocks", "seq")),
        _regional("nested"),
        _regional("nested", regions=("body.blocks", "seq")),
    ],
    ids=["full", "regional-blocks", "regional-split", "split-two-regions", "regional-nested", "nested-two-regions"],
)
def test_outputs_and_grads_equal_eager(plan):
    eager, compiled = _model(), _model()
    x = _x()
    ref = eager(x)
    ref.backward()
    apply_plan(compiled, plan)
    out = compiled(x)
    out.backward()
    torch.testing.assert_close(out, ref)
    for (name, p), (_, q) in zip(eager.named_parameters(), compiled.named_parameters()):
        torch.testing.assert_close(q.grad, p.grad, msg=name)


def test_nested_region_is_traced_as_one_shared_subgraph():
    from torch._dynamo.testing import CompileCounterWithBackend

    backend = CompileCounterWithBackend("aot_eager")
    model = _model()
    apply_plan(model, _regional("nested"))
    # recompile the top level with a backend that keeps the graph for us to look at
    model._compiled_call_impl = torch.compile(model._call_impl, backend=backend)
    model(_x())
    assert backend.frame_count == 1
    graph = backend.graphs[0]
    calls = [n for n in graph.graph.nodes if n.op == "call_function" and "invoke_subgraph" in str(n.target)]
    assert len(calls) == len(model.body.blocks)
    assert len({n.args[1] for n in calls}) == 1  # one identifier: the block is compiled once


# -- a plan from a file ------------------------------------------------------------------------
def test_plan_from_a_file(tmp_path):
    path = tmp_path / "plan.json"
    _regional("nested").dump(path)
    model = _model()
    x = _x()
    ref = _model()(x)
    assert apply_plan(model, path) is model
    assert _compiled(model)
    torch.testing.assert_close(model(x), ref)
    assert apply_plan(_model(), str(path)) is not None


def test_bad_plan_file_is_a_plan_error(tmp_path):
    path = tmp_path / "plan.json"
    path.write_text('{"version": 1, "strategy": "regional", "method": "per-layer"}')
    with pytest.raises(PlanError, match='method must be one of blocks, split, nested, got "per-layer"'):
        apply_plan(_model(), path)
    with pytest.raises(PlanError, match="cannot read"):
        apply_plan(_model(), tmp_path / "missing.json")


def test_nested_with_the_eager_backend_is_refused():
    plan = Plan(strategy="regional", regions=["body.blocks"], method="nested", plugin={"backend": "eager"})
    model = _model()
    with pytest.raises(ApplyError, match='method "nested" needs a backend that runs AOT autograd'):
        apply_plan(model, plan)
    assert not any(_compiled(m) for m in model.modules())
    assert "forward" not in vars(model.body.blocks[0])


def test_plan_must_be_a_plan_or_a_path():
    with pytest.raises(TypeError, match="plan must be a Plan or the path"):
        apply_plan(_model(), {"version": 1, "strategy": "full"})
    with pytest.raises(TypeError, match="model must be a torch.nn.Module"):
        apply_plan("model", Plan(strategy="none"))


# -- plans that do not fit the model ------------------------------------------------------------
def test_region_that_does_not_exist_names_what_the_model_has():
    with pytest.raises(ApplyError) as exc:
        apply_plan(_model(), _regional(regions=("transformer.h",)))
    msg = str(exc.value)
    assert "'transformer.h'" in msg and "no submodule 'transformer'" in msg
    assert "inp, body, seq, head" in msg


def test_region_path_that_stops_half_way():
    with pytest.raises(ApplyError, match=r"body \(Module\) has no submodule 'layers' \(it has: blocks\)"):
        apply_plan(_model(), _regional(regions=("body.layers",)))


def test_region_that_is_not_a_container():
    with pytest.raises(ApplyError, match=r"region 'head' is a Linear, not an nn.ModuleList or nn.Sequential"):
        apply_plan(_model(), _regional(regions=("head",)))
    with pytest.raises(ApplyError, match=r"region 'body' is a Module.*its children: blocks"):
        apply_plan(_model(), _regional(regions=("body",)))


def test_empty_region_and_no_regions():
    model = _model()
    model.body.blocks = nn.ModuleList()
    with pytest.raises(ApplyError, match="empty ModuleList"):
        apply_plan(model, _regional())
    with pytest.raises(ApplyError, match="names no regions"):
        apply_plan(_model(), Plan(strategy="regional", plugin={"backend": "eager"}))
    with pytest.raises(ApplyError, match="region path '' is empty"):
        apply_plan(_model(), _regional(regions=("",)))


def test_nothing_is_compiled_when_a_later_region_is_bad():
    model = _model()
    with pytest.raises(ApplyError):
        apply_plan(model, _regional(regions=("body.blocks", "nope")))
    assert not any(_compiled(m) for m in model.modules())


def test_out_of_place_compiled_model_is_refused():
    wrapped = torch.compile(_model(), backend="eager")
    with pytest.raises(ApplyError, match="already an out-of-place torch.compile wrapper"):
        apply_plan(wrapped, _regional())


def test_region_under_a_compile_wrapper_says_so():
    model = _model()
    model.body = torch.compile(model.body, backend="eager")
    with pytest.raises(ApplyError, match="torch.compile wrapper there"):
        apply_plan(model, _regional())


# -- a real model --------------------------------------------------------------------------
def test_gpt2_regional_nested_equals_eager():
    transformers = pytest.importorskip("transformers")
    config = transformers.GPT2Config(
        n_layer=2, n_embd=32, n_head=2, vocab_size=64, n_positions=32, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0
    )
    torch.manual_seed(0)
    eager = transformers.GPT2LMHeadModel(config)
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(config)
    for m in (eager, model):
        m.loss_type = "ForCausalLM"
    ids = torch.randint(0, 64, (2, 8), generator=torch.Generator().manual_seed(0))
    ref = eager(input_ids=ids, labels=ids).loss
    keys = list(model.state_dict())
    plan = Plan(
        strategy="regional",
        regions=["transformer.h"],
        method="nested",
        plugin={"backend": "aot_eager", "fullgraph": True, "use_regional_compilation": True},
    )
    assert apply_plan(model, plan) is model
    out = model(input_ids=ids, labels=ids).loss
    torch.testing.assert_close(out, ref)
    out.backward()
    assert model.transformer.h[1].mlp.c_fc.weight.grad is not None
    assert list(model.state_dict()) == keys
