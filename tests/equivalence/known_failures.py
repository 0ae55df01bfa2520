"""Today's measured failures of the equivalence harness, one entry per fixture.

Each entry is the measured reason. The tests of these fixtures are strict xfails: the suite stays
green while they fail, and a fix that makes one pass fails the suite until its entry is removed.
"""

KNOWN_FAILURES: dict[str, str] = {
    "model_optimizer_helper": (
        "regcomp-fix refuses it: 'no optimizer found (a torch.optim class, ... a function returning one, ...)'. "
        "The optimizer comes back in a tuple with its model (model, opt = get_model(lr)); the optimizer finder "
        "reads single-name assignments (codemod/roles.creations) and a factory only when every value it returns "
        "is an optimizer (analysis/optimizer_sources), so neither sees it; prepare() would also have to go after "
        "the call in main(), where both names are bound"
    ),
}
